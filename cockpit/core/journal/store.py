"""The journal store: :class:`Journal`, an append-only JSON Lines file (flock + fsync per event).

Reads are incremental and tolerant (torn last line, bad lines counted); ids are assigned under the
file lock; :meth:`Journal.recover` closes attempts whose writer is gone (see :mod:`.writer`).  The
file format is described in :mod:`cockpit.core.journal`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

try:  # pragma: no cover - always present on Linux/macOS
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking, still append-only
    fcntl = None  # type: ignore[assignment]

from ..layers import Layer, Outcome, Stage, Verdict
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
    _dumps,
    _jsonable,
    _num,
    _opt_int,
    _parse,
    fold,
)
from .writer import _boot_id, _hostname, proc_start_time, writer_state


def default_journal_path(config_path: str | os.PathLike[str]) -> Path:
    """``.cockpit/journal.jsonl`` beside the config file."""
    return Path(config_path).resolve().parent / ".cockpit" / "journal.jsonl"


# --------------------------------------------------------------------------------------------
# The journal
# --------------------------------------------------------------------------------------------


class Journal:
    """An append-only attempt journal in one JSON Lines file.

    Safe for several writers (threads of one cockpit, or several cockpits on one machine): each
    append holds ``flock(LOCK_EX)`` and ids are assigned under it.  The file is never rewritten.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        self._reset_cache()

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"

    @classmethod
    def for_config(cls, config_path: str | os.PathLike[str]) -> Journal:
        return cls(default_journal_path(config_path))

    # -- reading ------------------------------------------------------------------------------

    def _reset_cache(self) -> None:
        self._events: list[dict[str, Any]] = []
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
            with f:
                st = os.fstat(f.fileno())
                ident = (st.st_dev, st.st_ino)
                if ident != self._ident or st.st_size < self._offset:
                    self._reset_cache()  # a new or truncated file: start over
                    self._ident = ident
                f.seek(self._offset)
                data = f.read()
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
        if aid is not None and aid > self._max_id:
            self._max_id = aid

    def _snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            self._refresh()
            evs = list(self._events)
            if self._tail_event is not None:
                evs.append(self._tail_event)
            return evs

    @property
    def bad_lines(self) -> int:
        """Lines skipped by the latest read: undecodable, not a JSON object, or a torn last line."""
        with self._lock:
            return self._bad + self._tail_bad

    def events(self) -> Iterator[dict[str, Any]]:
        """Every well-formed event in file order, unknown event types included (copies)."""
        for ev in self._snapshot():
            yield dict(ev)

    def attempts(self) -> list[AttemptRecord]:
        """The folded view: one record per attempt, by id."""
        return fold(self._snapshot())

    def get(self, attempt_id: int) -> AttemptRecord | None:
        return next((r for r in self.attempts() if r.attempt == attempt_id), None)

    def open_attempts(self) -> list[AttemptRecord]:
        """Attempts that started and have no ``attempt_finished`` yet (live or orphaned)."""
        return [r for r in self.attempts() if r.open]

    def next_id(self) -> int:
        """The id the next :meth:`start_attempt` would get (advisory: another writer may win)."""
        with self._lock:
            self._refresh()
            return self._max_id + 1

    # -- writing ------------------------------------------------------------------------------

    def _event(self, attempt: int, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        clash = [k for k in fields if k in ENVELOPE]
        if clash:
            raise ValueError(f"journal event fields may not use envelope keys: {', '.join(clash)}")
        return {"v": SCHEMA_VERSION, "ts": time.time(), "event": event, "attempt": attempt, **fields}

    def _append(self, build: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """Under the file lock: refresh the view, build the events, append them one line each."""
        with self._lock:
            if not self.path.parent.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # notes and commands may be private
            created = not self.path.exists()
            if created:  # readable by its owner only: a journal holds commands, paths and errors
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600))
            with open(self.path, "a+b") as f:
                _flock(f, True)
                try:
                    self._refresh()
                    events = build()
                    lines = [_dumps(ev) for ev in events]  # serialise all before writing any
                    for line in lines:
                        _write_line(f, line)
                finally:
                    _flock(f, False)
            if created:
                _fsync_dir(self.path.parent)
            return events

    def record(self, attempt: int, event: str, **fields: Any) -> dict[str, Any]:
        """Append any event (``event`` is its type) for ``attempt``; returns what was written."""
        _check_id(attempt)
        if not isinstance(event, str) or not event:
            raise ValueError("event type must be a non-empty string")
        ev = self._event(attempt, event, _jsonable(fields))  # returned as it is stored
        self._append(lambda: [ev])
        return ev

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
            "code_version": _jsonable(code_version),
            "log_path": os.fspath(log_path) if log_path is not None else None,
            "cockpit_pid": pid,
            "cockpit_host": _hostname(),
            "cockpit_start_time": proc_start_time(pid),
            "boot_id": _boot_id(),
        }
        out: list[int] = []

        def build() -> list[dict[str, Any]]:
            aid = self._max_id + 1
            out.append(aid)
            return [self._event(aid, ATTEMPT_STARTED, fields)]

        self._append(build)
        return out[0]

    def record_stage(self, attempt: int, action: str, stage: Stage | Mapping[str, Any]) -> dict[str, Any]:
        """One stage result of ``action``, written as soon as it is known."""
        return self.record(attempt, STAGE, action=str(action), stage=_jsonable(stage))

    def record_verdict(self, attempt: int, action: str, verdict: Verdict | Mapping[str, Any]) -> dict[str, Any]:
        """An action's whole verdict (authoritative for that action's stages)."""
        return self.record(attempt, VERDICT, action=str(action), verdict=_jsonable(verdict))

    def record_job(self, attempt: int, job: Mapping[str, Any] | Any) -> dict[str, Any]:
        """What launch recorded: ``unit``, ``pid``, ``start_time``, ``pgid``, ``log_path``…"""
        jd = _jsonable(job)
        if not isinstance(jd, dict):
            raise TypeError("job must be a mapping (or have to_dict())")
        jd = {k: v for k, v in jd.items() if k not in ("v", "ts", "event", "attempt")}  # the event carries those
        return self.record(attempt, JOB, **jd)

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
                start = next(
                    (_num(e.get("ts")) for e in self._events
                     if e.get("attempt") == attempt and e.get("event") == ATTEMPT_STARTED),
                    None,
                )
                dur = round(max(0.0, time.time() - start), 3) if start is not None else None
            ev = self._event(
                attempt,
                ATTEMPT_FINISHED,
                {
                    "outcome": outcome_v,
                    "layer": layer_v,
                    "summary": str(summary or ""),
                    "first_error": _jsonable(first_error) if first_error is not None else None,
                    "duration_s": dur,
                    "caches": [_jsonable(c) for c in caches] if caches is not None else None,
                },
            )
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
            evs = list(self._events) + ([self._tail_event] if self._tail_event else [])
            for rec in fold(evs):
                if not rec.open:
                    continue
                alive, why = (False, "forced") if force else writer_state(rec)
                if alive is not False:
                    continue
                start = rec.started_at if rec.started_at is not None else rec.first_event_at
                last = rec.last_event_at
                dur = round(max(0.0, last - start), 3) if start is not None and last is not None else None
                summary = f"interrupted: {reason}"
                if rec.stages:
                    s = rec.stages[-1]
                    summary += f"; last stage seen: {s.action}/{s.stage.name} ({s.stage.status.value})"
                failed = rec.failed_stage
                out.append(self._event(rec.attempt, ATTEMPT_INTERRUPTED, {
                    "reason": reason,
                    "writer_pid": rec.cockpit_pid,
                    "writer_host": rec.cockpit_host,
                    "why": why,
                }))
                out.append(self._event(rec.attempt, ATTEMPT_FINISHED, {
                    "outcome": Outcome.INTERRUPTED.value,
                    "layer": failed.stage.layer.value if failed else None,
                    "summary": summary,
                    "first_error": rec.first_error,
                    "duration_s": dur,
                    "caches": rec.caches,
                }))
                ids.append(rec.attempt)
            return out

        self._append(build)
        if not ids:
            return []
        by_id = {r.attempt: r for r in self.attempts()}
        return [by_id[i] for i in ids if i in by_id]


# --------------------------------------------------------------------------------------------
# Low-level helpers
# --------------------------------------------------------------------------------------------


def _flock(f: Any, lock: bool) -> None:
    if fcntl is None:  # pragma: no cover
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX if lock else fcntl.LOCK_UN)


def _write_line(f: Any, line: bytes) -> None:
    fd = f.fileno()
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        line = b"\n" + line  # seal a torn fragment left by a writer that died mid-line
    f.write(line)
    f.flush()
    os.fsync(fd)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _check_id(attempt: Any) -> None:
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise ValueError(f"attempt id must be a positive int, not {attempt!r}")


def _name(target: Any) -> str | None:
    if target is None:
        return None
    name = getattr(target, "name", target)
    return str(name)
