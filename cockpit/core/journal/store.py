"""The journal store: :class:`Journal`, an append-only JSON Lines file (flock; fsync but for stages).

Reads are incremental and tolerant (torn last line, bad lines counted); ids are assigned under the
file lock; :meth:`Journal.recover` closes attempts whose writer is gone (see :mod:`.writer`).  The
file format is described in :mod:`cockpit.core.journal`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..layers import Layer, Outcome, Stage, Verdict
from ..redact import Redactor
from .files import OWN_DIR, JournalFault, flock, fsync_dir, open_append, private_dir, sync, tighten_file, write_line
from .records import (
    ATTEMPT_FINISHED,
    ATTEMPT_INTERRUPTED,
    ATTEMPT_STARTED,
    DEFAULT_REASON,
    DIFF,
    ENVELOPE,
    JOB,
    SCHEMA_VERSION,
    STAGE,
    VERDICT,
    AttemptRecord,
    Scope,
    _check_id,
    _dumps,
    _jsonable,
    _name,
    _num,
    _opt_int,
    _parse,
    fold,
)
from .writer import _boot_id, _hostname, closing_fields, proc_start_time, writer_state

log = logging.getLogger(__name__)

#: fields written verbatim, never redacted: the paths and names cockpit built to find its job again
VERBATIM = frozenset({"log_path", "pid_file", "exit_file", "unit", "launch_id", "workdir", "diff_path", "cockpit_host",
                      "boot_id", "target", "where"})


def redact_event(fields: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    """An event's fields with every string redacted, except the :data:`VERBATIM` ones."""
    return {k: (v if k in VERBATIM else redactor.data(v)) for k, v in fields.items()}


def default_journal_path(config_path: str | os.PathLike[str]) -> Path:
    """``.cockpit/journal.jsonl`` beside the config file."""
    return Path(config_path).resolve().parent / ".cockpit" / "journal.jsonl"


class Journal:
    """An append-only attempt journal in one JSON Lines file.

    Safe for several writers (threads of one cockpit, or several cockpits on one machine): each
    append holds ``flock(LOCK_EX)`` and ids are assigned under it.  The file is never rewritten.

    Every string of every event passes ``redactor`` before it is written (default: the built-in
    secret shapes; the engine gives the config's), except the :data:`VERBATIM` fields.

    A write that fails (disk full, read-only file system) raises nothing: the events stay queued
    in memory, in order, and are part of every read (:meth:`attempts`, :meth:`get`); :attr:`fault`
    says what failed and how to fix it; the next write or :meth:`flush` writes the queue first.
    """

    def __init__(self, path: str | os.PathLike[str], redactor: Redactor | None = None, scope: Scope | None = None) -> None:
        self.path = Path(path)
        self.redactor = redactor if redactor is not None else Redactor()
        #: whose attempts this reader sees and where its new ones are said to run (None: all)
        self.scope = scope
        self._lock = threading.RLock()
        #: events built but not written yet (a failed write), oldest first, with their line
        self._pending: list[tuple[dict[str, Any], bytes]] = []
        #: why the journal cannot be written now (None when it can)
        self.fault: JournalFault | None = None
        self._reset_cache()
        tighten_file(self.path)  # a journal left 0644 by an older cockpit: owner-only from now on
        if self.path.parent.name == OWN_DIR and self.path.parent.exists():
            with contextlib.suppress(OSError):
                private_dir(self.path.parent)

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"

    @classmethod
    def for_config(cls, config_path: str | os.PathLike[str], redactor: Redactor | None = None) -> Journal:
        return cls(default_journal_path(config_path), redactor)

    # -- reading ------------------------------------------------------------------------------

    def _reset_cache(self) -> None:
        self._events: list[dict[str, Any]] = []
        self._by_id: dict[int, list[dict[str, Any]]] = {}  # the same events by attempt: get() folds one
        self._offset = 0
        self._ident: tuple[int, int] | None = None
        self._bad = 0
        self._max_id = 0
        self._tail_event: dict[str, Any] | None = None
        self._tail_bad = 0

    def _refresh(self) -> None:
        """Parse whatever was appended since the last read (thread-safe via ``self._lock``)."""
        with self._lock:
            try:
                f = open(self.path, "rb")
            except FileNotFoundError:
                self._reset_cache()
                return
            except OSError as e:  # unreadable for now: keep what was read, say so
                log.info("cannot read the journal %s: %s", self.path, e)
                return
            with f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    return  # a device (a link to /dev/full, /dev/zero) holds no journal: keep the view
                ident = (st.st_dev, st.st_ino)
                if ident != self._ident or st.st_size < self._offset:
                    self._reset_cache()  # a new or truncated file: start over
                    self._ident = ident
                f.seek(self._offset)
                try:
                    data = f.read()
                except OSError as e:
                    log.info("cannot read the journal %s: %s", self.path, e)
                    return
            end = data.rfind(b"\n") + 1
            for line in data[:end].split(b"\n")[:-1]:
                ev = _parse(line)
                if ev is None:
                    if line.strip():
                        self._bad += 1
                    continue
                self._add(ev)
            self._offset += end
            tail = data[end:]
            # A last line without its newline: torn by a crash, or still being written.  It is
            # not consumed (the next read sees it again, complete or not); a valid object counts.
            self._tail_event = _parse(tail) if tail.strip() else None
            self._tail_bad = 1 if tail.strip() and self._tail_event is None else 0
            if self._tail_event is not None:
                aid = _opt_int(self._tail_event.get("attempt"))
                if aid is not None:
                    self._max_id = max(self._max_id, aid)

    def _add(self, ev: dict[str, Any]) -> None:
        self._events.append(ev)
        aid = _opt_int(ev.get("attempt"))
        if aid is not None:
            self._by_id.setdefault(aid, []).append(ev)
            self._max_id = max(self._max_id, aid)

    def _snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            self._refresh()
            evs = list(self._events)
            if self._tail_event is not None:
                evs.append(self._tail_event)
            return evs + [ev for ev, _ in self._pending]

    @property
    def bad_lines(self) -> int:
        """Lines skipped by the latest read: undecodable, not a JSON object, or a torn last line."""
        with self._lock:
            return self._bad + self._tail_bad

    def events(self) -> Iterator[dict[str, Any]]:
        """Every well-formed event in file order, unknown event types included (copies)."""
        for ev in self._snapshot():
            yield dict(ev)

    def version(self) -> tuple[Any, ...]:
        """Changes whenever :meth:`attempts` could: the file's identity, size and modification
        time, and the writes still queued (a poller compares it before folding every event again)."""
        try:
            st = os.stat(self.path)
            f: tuple[int, ...] | None = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            f = None
        with self._lock:
            return (f, len(self._pending), id(self._tail_event))

    def attempts(self, redactor: Redactor | None = None) -> list[AttemptRecord]:
        """The folded view: one record per attempt, by id.  With ``redactor`` every event is
        redacted first (exports: a journal written before a secret was known, or by an older cockpit)."""
        evs = self._snapshot()
        if redactor is not None:
            evs = [redact_event(ev, redactor) for ev in evs]
        return [r for r in fold(evs) if self.scope is None or self.scope.owns(r)]

    def get(self, attempt_id: int) -> AttemptRecord | None:
        """One attempt's record: its own events folded (not the whole journal's)."""
        with self._lock:
            self._refresh()
            late = ([self._tail_event] if self._tail_event is not None else []) + [ev for ev, _ in self._pending]
            evs = self._by_id.get(attempt_id, []) + [ev for ev in late if _opt_int(ev.get("attempt")) == attempt_id]
        rec = next(iter(fold(evs)), None)
        return rec if rec is None or self.scope is None or self.scope.owns(rec) else None

    def open_attempts(self) -> list[AttemptRecord]:
        """Attempts that started and have no ``attempt_finished`` yet (live or orphaned)."""
        return [r for r in self.attempts() if r.open]

    def next_id(self) -> int:
        """The id the next :meth:`start_attempt` would get (advisory: another writer may win)."""
        with self._lock:
            self._refresh()
            return self._next_free_id()

    def _next_free_id(self) -> int:
        queued = (_opt_int(ev.get("attempt")) or 0 for ev, _ in self._pending)
        return max(self._max_id, *queued, 0) + 1

    @property
    def pending(self) -> int:
        """How many events wait in memory for the journal to become writable."""
        with self._lock:
            return len(self._pending)

    def unwritten(self) -> list[dict[str, Any]]:
        """The queued events (copies), oldest first."""
        with self._lock:
            return [dict(ev) for ev, _ in self._pending]

    # -- writing ------------------------------------------------------------------------------

    def _event(self, attempt: int, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        clash = [k for k in fields if k in ENVELOPE]
        if clash:
            raise ValueError(f"journal event fields may not use envelope keys: {', '.join(clash)}")
        kept = redact_event(fields, self.redactor)
        return {"v": SCHEMA_VERSION, "ts": time.time(), "event": event, "attempt": attempt, **kept}

    def _append(self, build: Callable[[], list[dict[str, Any]]], durable: bool = True) -> list[dict[str, Any]]:
        """Under the file lock: refresh the view, build the events, append them one line each
        (after any events still queued).  What cannot be written stays queued (see :attr:`fault`).
        ``durable``: fsync each line (all but stages: a written line survives a crash of cockpit,
        and the next durable one's fsync puts it on disk; a machine crash may lose the last ones)."""
        with self._lock:
            try:
                fd, created = open_append(self.path)
            except OSError as e:
                return self._queue(build, e)
            try:
                try:
                    flock(fd, True)
                except OSError as e:
                    return self._queue(build, e)
                try:
                    events = self._queue(build)
                    self._write_pending(fd, durable)
                finally:
                    with contextlib.suppress(OSError):
                        flock(fd, False)
            finally:
                os.close(fd)
            if created:
                fsync_dir(self.path.parent)
            return events

    def _queue(self, build: Callable[[], list[dict[str, Any]]], error: OSError | None = None) -> list[dict[str, Any]]:
        """Refresh the view, build the events and queue them (serialised first: an event that cannot
        be written as JSON raises here and never blocks the queue); ``error``: why they must wait."""
        self._refresh()
        events = build()
        self._pending.extend([(ev, _dumps(ev)) for ev in events])
        if error is not None:
            self._set_fault(error)
        return events

    def _write_pending(self, fd: int, durable: bool = True) -> bool:
        """Write the queue in order; stop at the first failure (the rest stays queued).  With the view
        at the file's end (under the lock), a written line joins it as it is: no read parses it back."""
        known = self._at_end(fd)
        while self._pending:
            done, line = self._pending[0]
            try:
                write_line(fd, line)
            except OSError as e:
                self._set_fault(e)
                return False
            self._pending.pop(0)
            if known:
                self._add(json.loads(line))
                self._offset += len(line)
            self._max_id = max(self._max_id, _opt_int(done.get("attempt")) or 0)  # even if it is never read back
            try:
                sync(fd) if durable else None
            except OSError as e:  # written but maybe not on disk: said, not written twice
                self._set_fault(e)
                return False
        if self.fault is not None:
            log.info("the journal %s is writable again: queued events written", self.path)
            self.fault = None
        return True

    def _at_end(self, fd: int) -> bool:
        """The view holds all of the file ``fd`` appends to (no torn last line after it)."""
        try:
            st = os.fstat(fd)
        except OSError:
            return False  # the write that follows says what is wrong
        return (st.st_dev, st.st_ino) == self._ident and st.st_size == self._offset and self._tail_event is None and not self._tail_bad

    def _set_fault(self, e: OSError) -> None:
        old = self.fault
        self.fault = JournalFault(str(self.path), e.errno, e.strerror or str(e), since=old.since if old else time.time(),
                                  queued=len(self._pending))
        if old is None:  # info: the front ends say it themselves (a warning would print twice)
            log.info("%s", self.fault.problem)

    def flush(self) -> bool:
        """Write the queued events now; True when nothing is left queued."""
        with self._lock:
            if not self._pending:
                return True
            self._append(list)
            return not self._pending

    def record(self, attempt: int, event: str, *, durable: bool = True, **fields: Any) -> dict[str, Any]:
        """Append any event (``event`` is its type) for ``attempt``; returns what was written.
        ``durable=False``: without its own fsync (a durable record follows a moment later)."""
        _check_id(attempt)
        if not isinstance(event, str) or not event:
            raise ValueError("event type must be a non-empty string")
        return self._record(attempt, event, fields, durable)

    def _record(self, attempt: int, event: str, fields: Mapping[str, Any], durable: bool = True) -> dict[str, Any]:
        ev = self._event(attempt, event, _jsonable(fields))  # returned as it is stored
        return self._append(lambda: [ev], durable)[0]

    def start_attempt(
        self,
        note: str,
        target: Any,
        code_version: Mapping[str, Any] | Any | None = None,
        log_path: str | os.PathLike[str] | None = None,
    ) -> int:
        """Open a new attempt; returns its id (largest id in the file + 1)."""
        pid = os.getpid()
        fields = {
            "note": str(note or ""),
            "target": _name(target),
            **({"where": self.scope.where} if self.scope is not None else {}),
            "code_version": _jsonable(code_version),
            "log_path": os.fspath(log_path) if log_path is not None else None,
            "cockpit_pid": pid,
            "cockpit_host": _hostname(),
            "cockpit_start_time": proc_start_time(pid),
            "boot_id": _boot_id(),
        }
        out: list[int] = []

        def build() -> list[dict[str, Any]]:
            aid = self._next_free_id()
            out.append(aid)
            return [self._event(aid, ATTEMPT_STARTED, fields)]

        self._append(build)
        return out[0]

    def record_stage(self, attempt: int, action: str, stage: Stage | Mapping[str, Any]) -> dict[str, Any]:
        """One stage result of ``action``, written as soon as it is known."""
        _check_id(attempt)
        return self._record(attempt, STAGE, {"action": str(action), "stage": _jsonable(stage)}, durable=False)

    def record_verdict(self, attempt: int, action: str, verdict: Verdict | Mapping[str, Any], *, durable: bool = True) -> dict[str, Any]:
        """An action's whole verdict (authoritative for that action's stages).  ``durable=False``: written
        without its own fsync, as a stage is (an attempt's step before its end: the attempt's durable
        end, or the job record before it, puts it on disk)."""
        _check_id(attempt)
        return self._record(attempt, VERDICT, {"action": str(action), "verdict": _jsonable(verdict)}, durable)

    def record_job(self, attempt: int, job: Mapping[str, Any] | Any, *, durable: bool = True) -> dict[str, Any]:
        """What launch recorded: ``unit``, ``pid``, ``start_time``, ``pgid``, ``log_path``… (a later
        ``job`` event adds to it: what verify saw of the main process)."""
        jd = _jsonable(job)
        if not isinstance(jd, dict):
            raise TypeError("job must be a mapping (or have to_dict())")
        jd = {k: v for k, v in jd.items() if k not in ("v", "ts", "event", "attempt")}  # the event carries those
        return self.record(attempt, JOB, durable=durable, **jd)

    def record_diff(
        self,
        attempt: int,
        files: Iterable[str],
        added: int,
        removed: int,
        diff_path: str | os.PathLike[str] | None = None,
    ) -> dict[str, Any]:
        """What changed in this attempt's code (optional)."""
        return self.record(
            attempt,
            DIFF,
            files=[str(f) for f in files],
            added=int(added),
            removed=int(removed),
            diff_path=os.fspath(diff_path) if diff_path is not None else None,
        )

    def finish_attempt(
        self,
        attempt: int,
        outcome: Outcome | str,
        *,
        layer: Layer | str | None = None,
        summary: str = "",
        first_error: Mapping[str, Any] | None = None,
        caches: Iterable[Any] | None = None,
        duration_s: float | None = None,
    ) -> dict[str, Any]:
        """Close an attempt with its outcome.  ``duration_s`` defaults to now − its start."""
        _check_id(attempt)
        outcome_v = Outcome(outcome).value  # raises on a value that is not an outcome
        layer_v = Layer(layer).value if layer is not None else None
        out: list[dict[str, Any]] = []

        def build() -> list[dict[str, Any]]:
            dur = duration_s
            if dur is None:
                evs = self._by_id.get(attempt, []) + [ev for ev, _ in self._pending if ev.get("attempt") == attempt]
                start = next((_num(e.get("ts")) for e in evs if e.get("event") == ATTEMPT_STARTED), None)
                dur = round(max(0.0, time.time() - start), 3) if start is not None else None
            ev = self._event(attempt, ATTEMPT_FINISHED, {
                "outcome": outcome_v,
                "layer": layer_v,
                "summary": str(summary or ""),
                "first_error": _jsonable(first_error) if first_error is not None else None,
                "duration_s": dur,
                "caches": [_jsonable(c) for c in caches] if caches is not None else None,
            })
            out.append(ev)
            return [ev]

        self._append(build)
        return out[0]

    def recover(self, reason: str = DEFAULT_REASON, *, force: bool = False) -> list[AttemptRecord]:
        """Close open attempts whose writer is gone as ``interrupted``; return them.

        For each open attempt, :func:`writer_state` decides: a writer that is still alive (another
        live cockpit, or this process) is left alone; one that is gone (pid not running, zombie,
        pid reused, host rebooted, no pid recorded) gets ``attempt_interrupted`` +
        ``attempt_finished`` (outcome ``interrupted``).  Attempts written on another host cannot be
        checked and are only closed with ``force=True`` (which closes every open attempt).

        The returned records carry ``job`` (unit, pid, start_time, pgid, log_path): what the
        caller needs to re-attach to, or stop, a job that may still be running.  Decision and
        writes happen under the file lock, so two cockpits recovering at once write one set.
        """
        if not self.path.exists():
            return []
        ids: list[int] = []

        def build() -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            evs = list(self._events) + ([self._tail_event] if self._tail_event else []) + [ev for ev, _ in self._pending]
            for rec in fold(evs):
                if not rec.open:
                    continue
                alive, why = (False, "forced") if force else writer_state(rec)
                if alive is not False:
                    continue
                interrupted, finished = closing_fields(rec, reason, why)
                out += [self._event(rec.attempt, ATTEMPT_INTERRUPTED, interrupted), self._event(rec.attempt, ATTEMPT_FINISHED, finished)]
                ids.append(rec.attempt)
            return out

        self._append(build)
        if not ids:
            return []
        by_id = {r.attempt: r for r in self.attempts()}
        return [by_id[i] for i in ids if i in by_id]
