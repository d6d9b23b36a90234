"""The attempt journal: an append-only JSON Lines record of every attempt, plus a Markdown export.

An *attempt* is one try of a fix: note (hypothesis) → deploy → clear caches → stop → launch →
verify, ending in an honest :class:`~cockpit.core.layers.Outcome`.  The journal writes one JSON
object per line and never rewrites the file, so a crash can at worst leave one torn last line.

File format (schema version 1).  Every line has an envelope::

    {"v": 1, "ts": <unix float>, "event": <type>, "attempt": <int id>, ...}

and event-specific fields:

``attempt_started``
    ``note``, ``target`` (name), ``code_version`` (dict: ``git_commit``, ``dirty_hash``,
    ``dirty``, ``files``, ``source``; or null), ``log_path``, and who wrote it:
    ``cockpit_pid``, ``cockpit_host``, ``cockpit_start_time`` (``/proc/PID/stat`` field 22, guards
    against pid reuse) and ``boot_id`` (``/proc/sys/kernel/random/boot_id``: a reboot ends every
    writer).
``stage``
    ``action`` (deploy / clear-cache / stop / launch / verify / …) and ``stage``
    (:meth:`Stage.to_dict`): written as each stage completes, so a crash mid-action still leaves
    the evidence seen so far.
``verdict``
    ``action`` and ``verdict`` (:meth:`Verdict.to_dict`): the action's whole, authoritative
    verdict.  In the folded view it replaces the ``stage`` events of the same action that came
    before it (it also carries the ``not reached`` stages that were never written one by one).
``job``
    what launch recorded, flat: ``unit``, ``pid``, ``start_time``, ``pgid``, ``log_path`` (enough
    for a later cockpit to re-attach to or stop the job).  Later ``job`` events update earlier ones.
``attempt_finished``
    ``outcome``, ``layer``, ``summary``, ``first_error`` (dict or null), ``duration_s``,
    ``caches`` (list of ``{"path", "bytes"}`` that were cleared; null when none were cleared).
``attempt_interrupted``
    written by :meth:`Journal.recover`: ``reason``, ``writer_pid``, ``writer_host``, ``why``.
``diff``
    optional, what changed: ``files``, ``added``, ``removed``, ``diff_path``.

Ids increase from 1; the next id is the largest id seen in the file plus one (computed under the
file lock, so two cockpits never hand out the same id).

Writing: every event is one ``write`` of one line to a file opened in append mode, under
``fcntl.flock(LOCK_EX)``, then ``flush`` and ``os.fsync``.  If the file does not end with a
newline (a writer died mid-line), a newline is written first so the torn fragment stays a line of
its own and cannot corrupt the next event.

Reading tolerates a torn last line and any undecodable line (both are skipped and counted in
:attr:`Journal.bad_lines`), unknown event types (kept: :meth:`Journal.events` yields them and
:attr:`AttemptRecord.extra` holds them) and missing fields.  Reads are incremental: only the bytes
appended since the last read are parsed.

Recovery (:meth:`Journal.recover`): an attempt that started but never finished is *open*.  It is
marked ``interrupted`` only when the cockpit that wrote it is provably gone: its pid is not
running on this host, is a zombie, now belongs to another process (start time differs), or the
host rebooted since (boot id differs).  An open attempt whose writer is still alive (another live
cockpit, or this very process) is left alone: that cockpit will finish it.  An attempt written on
another host cannot be checked and is left alone unless ``force=True``.

No textual/rich imports here: ``cockpit.core`` is UI-free.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

try:  # pragma: no cover - always present on Linux/macOS
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking, still append-only
    fcntl = None  # type: ignore[assignment]

from ..layers import Layer, Outcome, Stage, Status, Verdict

__all__ = [
    "SCHEMA_VERSION",
    "DEFAULT_REASON",
    "ATTEMPT_STARTED",
    "STAGE",
    "VERDICT",
    "JOB",
    "ATTEMPT_FINISHED",
    "ATTEMPT_INTERRUPTED",
    "DIFF",
    "EVENT_TYPES",
    "Journal",
    "AttemptRecord",
    "StageRecord",
    "fold",
    "default_journal_path",
    "proc_start_time",
    "writer_state",
    "render_markdown",
    "outcome_label",
]

SCHEMA_VERSION = 1
DEFAULT_REASON = "cockpit stopped before a verdict"

ATTEMPT_STARTED = "attempt_started"
STAGE = "stage"
VERDICT = "verdict"
JOB = "job"
ATTEMPT_FINISHED = "attempt_finished"
ATTEMPT_INTERRUPTED = "attempt_interrupted"
DIFF = "diff"
EVENT_TYPES = (ATTEMPT_STARTED, STAGE, VERDICT, JOB, ATTEMPT_FINISHED, ATTEMPT_INTERRUPTED, DIFF)

#: Keys every event carries; event-specific fields may not use them.
ENVELOPE = ("v", "ts", "event", "attempt")


def default_journal_path(config_path: str | os.PathLike[str]) -> Path:
    """``.cockpit/journal.jsonl`` beside the config file."""
    return Path(config_path).resolve().parent / ".cockpit" / "journal.jsonl"


# --------------------------------------------------------------------------------------------
# Process identity (who wrote an attempt, and is it still alive?)
# --------------------------------------------------------------------------------------------


def _read_stat(pid: int) -> tuple[str, int] | None:
    """(state, start_time) from ``/proc/PID/stat``, or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = raw[raw.rfind(")") + 2 :].split()
    try:
        return rest[0], int(rest[19])  # field 3 = state, field 22 = starttime
    except (IndexError, ValueError):
        return None


def proc_start_time(pid: int) -> int | None:
    """``/proc/PID/stat`` field 22 (start time in clock ticks since boot), or None."""
    st = _read_stat(pid)
    return st[1] if st else None


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _hostname() -> str:
    return socket.gethostname()


def _pid_running(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (a zombie is dead, merely unreaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    except OSError:
        return False
    st = _read_stat(pid)
    if st is not None and st[0] in ("Z", "X"):
        return False
    return True


def writer_state(rec: "AttemptRecord") -> tuple[bool | None, str]:
    """Is the cockpit that wrote ``rec`` still alive?  ``(True|False|None, why)``.

    ``None`` means it cannot be told from here (the attempt was written on another host).
    """
    here = _hostname()
    host = rec.cockpit_host
    if host and host != here:
        return None, f"written by cockpit on host {host!r}; its pid cannot be checked from {here!r}"
    boot = _boot_id()
    if rec.boot_id and boot and rec.boot_id != boot:
        return False, "this machine rebooted since the attempt started"
    pid = rec.cockpit_pid
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False, "no writer pid was recorded (start event missing or torn)"
    if not _pid_running(pid):
        return False, f"cockpit pid {pid} is no longer running"
    recorded = rec.cockpit_start_time
    current = proc_start_time(pid)
    if isinstance(recorded, int) and current is not None and recorded != current:
        return False, f"pid {pid} now belongs to another process (start time {current} != {recorded})"
    if pid == os.getpid():
        return True, f"written by this cockpit (pid {pid})"
    return True, f"cockpit pid {pid} is still running"


# --------------------------------------------------------------------------------------------
# The folded view
# --------------------------------------------------------------------------------------------


@dataclass
class StageRecord:
    """One stage in an attempt's timeline: which action it belongs to, and the stage itself."""

    action: str
    stage: Stage
    ts: float | None = None
    from_verdict: bool = False
    _covered: bool = field(default=False, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, **self.stage.to_dict()}


@dataclass
class AttemptRecord:
    """Everything the journal knows about one attempt, folded from its events."""

    attempt: int
    note: str = ""
    target: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    #: An :class:`Outcome`; a plain string only if the file holds a value this version does not know.
    outcome: Outcome | str = Outcome.RUNNING
    layer: Layer | str | None = None
    summary: str = ""
    code_version: dict[str, Any] | None = None
    log_path: str | None = None
    job: dict[str, Any] | None = None
    stages: list[StageRecord] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    first_error: dict[str, Any] | None = None
    caches: list[Any] | None = None
    duration_s: float | None = None
    diff: dict[str, Any] | None = None
    interrupted_reason: str | None = None
    cockpit_pid: int | None = None
    cockpit_host: str | None = None
    cockpit_start_time: int | None = None
    boot_id: str | None = None
    first_event_at: float | None = None
    last_event_at: float | None = None
    #: Events this version does not understand (unknown types, unparseable stages/verdicts).
    extra: list[dict[str, Any]] = field(default_factory=list)
    #: Every raw event of this attempt, in file order.
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)
    _finished: bool = field(default=False, repr=False)

    @property
    def id(self) -> int:
        return self.attempt

    @property
    def open(self) -> bool:
        """Started (or at least written to) but not finished."""
        return not self._finished

    @property
    def failed_stage(self) -> StageRecord | None:
        return next((s for s in self.stages if s.stage.status is Status.FAIL), None)

    # -- folding ------------------------------------------------------------------------------

    def apply(self, ev: Mapping[str, Any]) -> None:
        """Fold one event (of this attempt) into the record."""
        self.events.append(dict(ev))
        ts = _num(ev.get("ts"))
        if ts is not None:
            if self.first_event_at is None or ts < self.first_event_at:
                self.first_event_at = ts
            if self.last_event_at is None or ts > self.last_event_at:
                self.last_event_at = ts
        kind = ev.get("event")
        if kind == ATTEMPT_STARTED:
            if self.started_at is not None:  # a duplicate start: keep the first, note the second
                self.extra.append(dict(ev))
                return
            self.started_at = ts
            self.note = _str(ev.get("note"))
            self.target = _opt_str(ev.get("target"))
            cv = ev.get("code_version")
            self.code_version = cv if isinstance(cv, dict) else None
            self.log_path = _opt_str(ev.get("log_path")) or self.log_path
            self.cockpit_pid = _opt_int(ev.get("cockpit_pid"))
            self.cockpit_host = _opt_str(ev.get("cockpit_host"))
            self.cockpit_start_time = _opt_int(ev.get("cockpit_start_time"))
            self.boot_id = _opt_str(ev.get("boot_id"))
        elif kind == STAGE:
            try:
                stage = Stage.from_dict(ev["stage"])
            except (KeyError, TypeError, ValueError, AttributeError):
                self.extra.append(dict(ev))
                return
            self.stages.append(StageRecord(_str(ev.get("action")) or "?", stage, ts))
        elif kind == VERDICT:
            try:
                verdict = Verdict.from_dict(ev["verdict"])
            except (KeyError, TypeError, ValueError, AttributeError):
                self.extra.append(dict(ev))
                return
            action = _str(ev.get("action")) or verdict.action
            self.verdicts.append(verdict)
            self._merge_verdict(action, verdict, ts)
        elif kind == JOB:
            nested = ev.get("job")
            jd = dict(nested) if isinstance(nested, dict) else {k: v for k, v in ev.items() if k not in ENVELOPE}
            self.job = {**(self.job or {}), **jd}
            if not self.log_path and isinstance(jd.get("log_path"), str):
                self.log_path = jd["log_path"]
        elif kind == ATTEMPT_FINISHED:
            outcome = _outcome(ev.get("outcome"))
            # The first finish is the truth, except that a real outcome written later by the
            # original cockpit beats an "interrupted" that recovery wrote on its behalf.
            if self._finished and not (self.outcome is Outcome.INTERRUPTED and outcome is not Outcome.INTERRUPTED):
                self.extra.append(dict(ev))
                return
            self._finished = True
            self.finished_at = ts
            self.outcome = outcome
            self.layer = _layer(ev.get("layer"))
            self.summary = _str(ev.get("summary"))
            fe = ev.get("first_error")
            self.first_error = fe if isinstance(fe, dict) else ({"summary": fe} if isinstance(fe, str) and fe else None)
            caches = ev.get("caches")
            self.caches = list(caches) if isinstance(caches, list) else None
            self.duration_s = _num(ev.get("duration_s"))
        elif kind == ATTEMPT_INTERRUPTED:
            self.interrupted_reason = _str(ev.get("reason")) or DEFAULT_REASON
        elif kind == DIFF:
            self.diff = {k: v for k, v in ev.items() if k not in ENVELOPE}
        else:
            self.extra.append(dict(ev))

    def _merge_verdict(self, action: str, verdict: Verdict, ts: float | None) -> None:
        live = [i for i, s in enumerate(self.stages) if s.action == action and not s.from_verdict and not s._covered]
        if not verdict.stages:
            for i in live:
                self.stages[i]._covered = True
            return
        new = [StageRecord(action, st, ts, from_verdict=True) for st in verdict.stages]
        if live:
            pos = live[0]
            drop = set(live)
            self.stages = [s for i, s in enumerate(self.stages) if i not in drop]
            self.stages[pos:pos] = new
        else:
            self.stages.extend(new)

    # -- output -------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: what ``cockpit history --json`` prints (a list of these)."""
        return {
            "attempt": self.attempt,
            "note": self.note,
            "target": self.target,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_s": self.duration_s,
            "outcome": _value(self.outcome),
            "layer": _value(self.layer),
            "summary": self.summary,
            "code_version": self.code_version,
            "log_path": self.log_path,
            "job": self.job,
            "first_error": self.first_error,
            "caches": self.caches,
            "stages": [s.to_dict() for s in self.stages],
            "verdicts": [
                {"action": v.action, "ok": v.ok, "layer": _value(v.layer), "summary": v.summary()}
                for v in self.verdicts
            ],
            "diff": self.diff,
            "interrupted_reason": self.interrupted_reason,
            "open": self.open,
            "writer": {"pid": self.cockpit_pid, "host": self.cockpit_host},
        }


def fold(events: Iterable[Mapping[str, Any]]) -> list[AttemptRecord]:
    """Fold raw events into one :class:`AttemptRecord` per attempt id, sorted by id.

    Events without an integer ``attempt`` are ignored here (they still appear in
    :meth:`Journal.events`).
    """
    recs: dict[int, AttemptRecord] = {}
    for ev in events:
        aid = _opt_int(ev.get("attempt"))
        if aid is None:
            continue
        rec = recs.get(aid)
        if rec is None:
            rec = recs[aid] = AttemptRecord(attempt=aid)
        rec.apply(ev)
    return [recs[k] for k in sorted(recs)]


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
    def for_config(cls, config_path: str | os.PathLike[str]) -> "Journal":
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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
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


def _json_default(o: Any) -> Any:
    if isinstance(o, Enum):
        return o.value
    to_dict = getattr(o, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, os.PathLike):
        return os.fspath(o)
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if isinstance(o, bytes):
        return o.decode("utf-8", "replace")
    return str(o)  # never lose a journal line over an odd value


def _dumps(ev: Mapping[str, Any]) -> bytes:
    return (json.dumps(ev, ensure_ascii=False, separators=(",", ":"), default=_json_default) + "\n").encode("utf-8")


def _jsonable(o: Any) -> Any:
    """Plain JSON data for ``o`` (to_dict() objects, enums, paths converted)."""
    if o is None:
        return None
    return json.loads(json.dumps(o, default=_json_default))


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        ev = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return ev if isinstance(ev, dict) else None


def _check_id(attempt: Any) -> None:
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise ValueError(f"attempt id must be a positive int, not {attempt!r}")


def _name(target: Any) -> str | None:
    if target is None:
        return None
    name = getattr(target, "name", target)
    return str(name)


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _opt_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ("" if v is None else str(v))


def _opt_str(v: Any) -> str | None:
    return None if v is None else _str(v)


def _outcome(v: Any) -> Outcome | str:
    try:
        return Outcome(v)
    except ValueError:
        return _str(v) or "unknown"


def _layer(v: Any) -> Layer | str | None:
    if v is None or v == "":
        return None
    try:
        return Layer(v)
    except ValueError:
        return _str(v)


def _value(v: Any) -> Any:
    return v.value if isinstance(v, Enum) else v


# --------------------------------------------------------------------------------------------
# Markdown post-mortem
# --------------------------------------------------------------------------------------------

LEGEND = (
    "Outcomes: **passed**: the code ran and reached its progress marker (or stayed healthy); "
    "**failed**: the code ran and failed (`app`, or `gpu` after the job started), which is evidence "
    "about the hypothesis; **untested**: something below the code failed (`config`, `ssh`, `host`, "
    "`container`, `process`), so the fix never ran and says nothing about the hypothesis; "
    "**interrupted**: cockpit stopped before a verdict; **running**: no verdict yet."
)


def outcome_label(outcome: Outcome | str, layer: Layer | str | None = None) -> str:
    """A short phrase that keeps ``failed`` and ``untested`` visibly apart."""
    lay = _value(layer)
    o = _value(outcome)
    if o == Outcome.PASSED.value:
        return "passed — the code ran and reached its marker"
    if o == Outcome.FAILED.value:
        return "failed — the code ran and failed" + (f" ({lay})" if lay else "")
    if o == Outcome.UNTESTED.value:
        return "untested — the fix never ran" + (f" ({lay} failed)" if lay else "")
    if o == Outcome.INTERRUPTED.value:
        return "interrupted — cockpit stopped before a verdict"
    if o == Outcome.RUNNING.value:
        return "running — no verdict yet"
    return f"{o} — unknown outcome"


def _bold_label(outcome: Outcome | str, layer: Layer | str | None) -> str:
    word, _, rest = outcome_label(outcome, layer).partition(" — ")
    return f"**{word}** — {rest}"


def _cell(text: Any, limit: int | None = None) -> str:
    """One Markdown table cell: a single line, pipes escaped, optionally shortened."""
    s = _str(text)
    s = " ⏎ ".join(part.strip() for part in s.replace("\r\n", "\n").replace("\r", "\n").split("\n") if part.strip())
    if limit is not None and len(s) > limit:
        s = s[: limit - 1].rstrip() + "…"
    return s.replace("|", "\\|") if s else "—"


def _fmt_ts(ts: float | None) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def _fmt_duration(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 60:
        return f"{s:.1f}s" if s >= 0.05 or s == 0 else f"{s * 1000:.0f}ms"
    total = int(round(s))
    if total < 3600:
        return f"{total // 60}m {total % 60:02d}s"
    return f"{total // 3600}h {(total % 3600) // 60:02d}m"


def _fmt_bytes(n: Any) -> str | None:
    if isinstance(n, bool) or not isinstance(n, (int, float)):
        return None
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return None  # pragma: no cover


def _cache_size(c: Any) -> Any:
    if isinstance(c, dict):
        for k in ("bytes", "size", "size_bytes"):
            if k in c:
                return c[k]
    return None


def _cache_path(c: Any) -> str:
    if isinstance(c, dict):
        return _str(c.get("path") or c.get("name") or "?")
    return _str(c)


def _caches_cell(caches: list[Any] | None) -> str:
    if caches is None:
        return "no"
    if not caches:
        return "yes (nothing there)"
    sizes = [_cache_size(c) for c in caches]
    nums = [s for s in sizes if isinstance(s, (int, float)) and not isinstance(s, bool)]
    total = f", {_fmt_bytes(sum(nums))}" if nums else ""
    return f"{len(caches)} path{'s' if len(caches) != 1 else ''}{total}"


def _code_cell(cv: dict[str, Any] | None) -> str:
    if not cv:
        return "—"
    sha = _str(cv.get("git_commit") or "")
    short = sha[:7] if sha else (_str(cv.get("source")) or "no git")
    if cv.get("dirty"):
        short += "+dirty"
    return f"`{short}`" if short else "—"


def _first_error_lines(fe: Mapping[str, Any] | None) -> list[str]:
    if not fe:
        return []
    for key in ("lines", "traceback", "text", "excerpt"):
        v = fe.get(key)
        if isinstance(v, list) and v:
            return [ln for x in v for ln in (_str(x).splitlines() or [""])]
        if isinstance(v, str) and v.strip():
            return v.splitlines()
    for key in ("line", "message", "summary"):
        v = fe.get(key)
        if isinstance(v, str) and v.strip():
            return v.splitlines()
    return []


def _first_error_line(fe: Mapping[str, Any] | None) -> str:
    """The one line a person reads first."""
    if not fe:
        return ""
    for key in ("summary", "line", "message"):
        v = fe.get(key)
        if isinstance(v, str) and v.strip():
            return next(ln.strip() for ln in v.splitlines() if ln.strip())
    lines = [ln.rstrip() for ln in _first_error_lines(fe) if ln.strip()]
    if not lines:
        label = fe.get("label")
        return _str(label) if label else ""
    if lines[0].startswith("Traceback"):
        # A Python traceback says what happened on the first unindented line after its last
        # frame ("RuntimeError: …"); the message may continue on further lines.
        last_frame = max((i for i, ln in enumerate(lines) if ln[:1] in (" ", "\t")), default=0)
        return lines[min(last_frame + 1, len(lines) - 1)].strip()
    return lines[0].strip()


def _fence(lines: list[str]) -> str:
    """A fenced block longer than any backtick run inside it, so the content cannot close it."""
    body = "\n".join(lines)
    ticks = 3
    while "`" * ticks in body:
        ticks += 1
    fence = "`" * ticks
    return f"{fence}text\n{body}\n{fence}"


def render_markdown(attempts: Iterable[AttemptRecord], *, title: str = "cockpit attempt history") -> str:
    """A post-mortem timeline to paste into an incident report.

    A header with a legend, a summary table (one row per attempt), then one section per attempt
    with its stages and the first error's lines in a fenced block.  Times are UTC.
    """
    recs = list(attempts)
    out: list[str] = [f"# {title}", ""]
    if not recs:
        out += ["No attempts recorded.", "", LEGEND, ""]
        return "\n".join(out)

    starts = [r.started_at for r in recs if r.started_at is not None]
    counts: dict[str, int] = {}
    for r in recs:
        counts[_value(r.outcome)] = counts.get(_value(r.outcome), 0) + 1
    order = [o.value for o in (Outcome.PASSED, Outcome.FAILED, Outcome.UNTESTED, Outcome.INTERRUPTED, Outcome.RUNNING)]
    tally = ", ".join(f"{counts[o]} {o}" for o in order + sorted(set(counts) - set(order)) if counts.get(o))
    span = f"{_fmt_ts(min(starts))} → {_fmt_ts(max(starts))} (UTC)" if starts else "times unknown"
    out += [f"{len(recs)} attempt{'s' if len(recs) != 1 else ''}, {span}: {tally}.", "", LEGEND, ""]

    out += [
        "| # | started (UTC) | hypothesis | code | caches cleared | outcome | layer | first error | duration |",
        "|---:|---|---|---|---|---|---|---|---|",
    ]
    for r in recs:
        out.append(
            "| "
            + " | ".join(
                [
                    str(r.attempt),
                    _fmt_ts(r.started_at),
                    _cell(r.note, 80),
                    _code_cell(r.code_version),
                    _cell(_caches_cell(r.caches)),
                    _bold_label(r.outcome, r.layer),
                    _cell(_value(r.layer)),
                    _cell(_first_error_line(r.first_error), 120),
                    _fmt_duration(r.duration_s),
                ]
            )
            + " |"
        )
    out.append("")

    for r in recs:
        out += [f"## Attempt {r.attempt}: {outcome_label(r.outcome, r.layer)}", ""]
        out.append(f"- **Hypothesis:** {_cell(r.note)}")
        if r.target:
            out.append(f"- **Target:** {_cell(r.target)}")
        out.append(
            f"- **Started:** {_fmt_ts(r.started_at)} UTC · **finished:** {_fmt_ts(r.finished_at)}"
            f" · **duration:** {_fmt_duration(r.duration_s)}"
        )
        cv = r.code_version
        if cv:
            bits = [_code_cell(cv)]
            if cv.get("dirty_hash"):
                bits.append(f"dirty hash `{_str(cv['dirty_hash'])[:12]}`")
            files = cv.get("files")
            if isinstance(files, list) and files:
                shown = ", ".join(_str(f) for f in files[:8]) + (f", … {len(files) - 8} more" if len(files) > 8 else "")
                bits.append(f"files: {shown}")
            if cv.get("source"):
                bits.append(f"source: {_str(cv['source'])}")
            out.append(f"- **Code:** {_cell('; '.join(bits))}")
        if r.diff:
            d = r.diff
            files = d.get("files") if isinstance(d.get("files"), list) else []
            text = f"{len(files)} file(s), +{d.get('added', '?')} −{d.get('removed', '?')}"
            if d.get("diff_path"):
                text += f", `{_str(d['diff_path'])}`"
            out.append(f"- **Diff:** {_cell(text)}")
        if r.caches is None:
            out.append("- **Caches cleared:** no")
        elif not r.caches:
            out.append("- **Caches cleared:** yes, nothing was there")
        else:
            parts = []
            for c in r.caches:
                size = _fmt_bytes(_cache_size(c))
                parts.append(f"`{_cache_path(c)}`" + (f" ({size})" if size else ""))
            out.append(f"- **Caches cleared:** {', '.join(parts)}")
        if r.log_path:
            out.append(f"- **Log:** `{_str(r.log_path)}`")
        if r.job:
            j = r.job
            bits = [f"{k} {j[k]}" for k in ("unit", "pid", "pgid", "start_time") if j.get(k) not in (None, "")]
            if bits:
                out.append(f"- **Job:** {_cell(', '.join(bits))}")
        if r.summary:
            out.append(f"- **Summary:** {_cell(r.summary)}")
        if r.interrupted_reason:
            out.append(f"- **Interrupted:** {_cell(r.interrupted_reason)}")
        out.append("")

        if r.stages:
            out += ["| action | stage | status | layer | detail | duration |", "|---|---|---|---|---|---|"]
            for s in r.stages:
                st = s.stage
                status = f"**{st.status.value}**" if st.status is Status.FAIL else st.status.value
                out.append(
                    f"| {_cell(s.action)} | {_cell(st.name)} | {status} | {st.layer.value} | "
                    f"{_cell(st.detail, 160)} | {_fmt_duration(st.duration_s)} |"
                )
            out.append("")
        else:
            out += ["_No stages recorded._", ""]

        fe = r.first_error
        if fe:
            meta = []
            if fe.get("layer"):
                meta.append(f"layer `{_str(fe['layer'])}`")
            if fe.get("label"):
                meta.append(_str(fe["label"]))
            where = fe.get("path") or fe.get("log_path")
            lineno = fe.get("line_no", fe.get("lineno"))
            if where:
                meta.append(f"`{_str(where)}`" + (f" line {lineno}" if lineno is not None else ""))
            out.append("**First error**" + (f" ({', '.join(meta)})" if meta else "") + ":")
            out.append("")
            lines = _first_error_lines(fe)
            if len(lines) > 60:
                lines = lines[:60] + [f"… {len(lines) - 60} more lines"]
            out += [_fence(lines or [_first_error_line(fe)]), ""]
            if fe.get("advice"):
                out += [f"Advice: {_cell(fe['advice'])}", ""]
    return "\n".join(out)
