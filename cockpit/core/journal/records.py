"""Journal records: event names, the JSON form of an event, and the folded per-attempt view.

:func:`fold` turns raw events (dicts, as read from the file) into one :class:`AttemptRecord` per
attempt id; the tolerant readers (``_num``, ``_opt_int``, ``_outcome``, ``_layer``…) accept
whatever an older, newer or damaged file holds, and ``_dumps`` / ``_parse`` / ``_jsonable`` turn
one event into one line and back.  :func:`outcome_label` is the phrase that keeps ``failed`` and
``untested`` apart.  Nothing here touches the file (see :mod:`.store`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..layers import Layer, Outcome, Stage, Status, Verdict
from ..text import sanitize_data

SCHEMA_VERSION = 1
DEFAULT_REASON = "cockpit stopped before a verdict"

ATTEMPT_STARTED = "attempt_started"
STAGE = "stage"
VERDICT = "verdict"
JOB = "job"
ATTEMPT_FINISHED = "attempt_finished"
ATTEMPT_INTERRUPTED = "attempt_interrupted"
DIFF = "diff"
FATE = "fate"
STACKS = "stacks"
#: torch.compile's summary of the attempt's job (:class:`cockpit.core.compile.CompileSummary` ``to_dict``)
COMPILE = "compile"
#: fate states that end a job's story (a later reading never replaces them)
FINAL_FATES = ("finished", "died", "diverged", "stopped", "vanished")
EVENT_TYPES = (ATTEMPT_STARTED, STAGE, VERDICT, JOB, ATTEMPT_FINISHED, ATTEMPT_INTERRUPTED, DIFF, FATE, STACKS, COMPILE)

#: Keys every event carries; event-specific fields may not use them.
ENVELOPE = ("v", "ts", "event", "attempt")


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
    #: where its job ran (:class:`Scope`), in records written since cockpit says so
    where: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    #: parsed here, at the journal's edge: ``UNKNOWN`` when the file holds a value this version does not know
    outcome: Outcome = Outcome.RUNNING
    #: that value as the file wrote it (kept, so a record written back loses nothing); else ""
    outcome_raw: str = ""
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
    #: the job's latest fate after the verdict (``state``, ``layer``, ``cause``, ``at``, ``after_s``,
    #: ``last_progress``); the outcome above is never changed by it
    fate: dict[str, Any] | None = None
    #: the job's threads' stacks, latest dump (``method``, ``at``, ``summary``, ``text``, ``threads``)
    stacks: dict[str, Any] | None = None
    #: torch.compile's summary of the job, the latest written (``CompileSummary.to_dict()``)
    compile: dict[str, Any] | None = None
    #: not from the journal: the metrics summary (:func:`cockpit.core.metrics.summary`) a reader attaches
    metrics: dict[str, Any] | None = None
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
    def outcome_name(self) -> str:
        """The outcome as text: as the file wrote it when this version does not know it."""
        return self.outcome_raw or self.outcome.value

    @property
    def layer_name(self) -> str | None:
        """The layer as text (a layer this version does not know stays as the file wrote it)."""
        return None if self.layer is None else str(self.layer.value if isinstance(self.layer, Layer) else self.layer)

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
            self.where = _opt_str(ev.get("where"))
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
            self._job_from(ev.get("action"), stage)
        elif kind == VERDICT:
            try:
                verdict = Verdict.from_dict(ev["verdict"])
            except (KeyError, TypeError, ValueError, AttributeError):
                self.extra.append(dict(ev))
                return
            action = _str(ev.get("action")) or verdict.action
            self.verdicts.append(verdict)
            self._merge_verdict(action, verdict, ts)
            for st in verdict.stages:
                self._job_from(action, st)
        elif kind == JOB:
            nested = ev.get("job")
            jd = dict(nested) if isinstance(nested, dict) else {k: v for k, v in ev.items() if k not in ENVELOPE}
            self.job = {**(self.job or {}), **jd}
            if not self.log_path and isinstance(jd.get("log_path"), str):
                self.log_path = jd["log_path"]
        elif kind == ATTEMPT_FINISHED:
            outcome, raw = _outcome(ev.get("outcome"))
            # The first finish is the truth, except that a real outcome written later by the
            # original cockpit beats an "interrupted" that recovery wrote on its behalf.
            if self._finished and not (self.outcome is Outcome.INTERRUPTED and outcome is not Outcome.INTERRUPTED):
                self.extra.append(dict(ev))
                return
            self._finished = True
            self.finished_at = ts
            self.outcome, self.outcome_raw = outcome, raw
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
        elif kind == STACKS:
            self.stacks = {k: v for k, v in ev.items() if k not in ENVELOPE}
        elif kind == COMPILE:
            summary = ev.get("summary")
            if isinstance(summary, dict):
                self.compile = summary
        elif kind == FATE:
            if isinstance(ev.get("state"), str) and not (self.fate and self.fate.get("state") in FINAL_FATES):
                self.fate = {k: v for k, v in ev.items() if k not in ENVELOPE}
        else:
            self.extra.append(dict(ev))

    def _job_from(self, action: Any, stage: Stage) -> None:
        """A launch stage that carries the job's record (``data.job``) records it, whatever its
        name: a scheduler's job id is written with the stage that got it from ``sbatch``, so a
        later stop finds it whether the attempt then failed, stayed pending or was interrupted.
        A ``job`` event (or an earlier stage) already holding the same id wins over it."""
        jd = stage.data.get("job") if action == "launch" and isinstance(stage.data, dict) else None
        if not isinstance(jd, dict) or not (jd.get("pid") or jd.get("sched_id")):
            return
        self.job = {**jd, **(self.job or {})}
        if not self.log_path and isinstance(jd.get("log_path"), str):
            self.log_path = jd["log_path"]

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
            "where": self.where,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_s": self.duration_s,
            "outcome": self.outcome_name,
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
            "fate": self.fate,
            "stacks": self.stacks,
            "compile": self.compile,
            "metrics": self.metrics,
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


@dataclass(frozen=True)
class Scope:
    """Which attempts of a journal are one target's.  Config files in one directory share its
    journal (``.cockpit/journal.jsonl``): two single-target files for two containers read each
    other's jobs as their own (a second file's attempt "stopped" the first's job as exited, and
    its fate follower journalled that job, alive in its own container, as vanished).

    ``where`` is the place a job runs (host, runtime, container or workdir): an attempt started
    there is this target's whatever it was named; one journalled before cockpit wrote places is
    known by its target's name.  Attempt ids stay the journal's (a log named ``{attempt}`` in a
    shared workdir is never overwritten)."""

    name: str
    where: str

    def owns(self, rec: AttemptRecord) -> bool:
        if rec.where is not None:
            return rec.where == self.where
        return rec.target is None or rec.target == self.name


def scheduler_jobs(recs: Iterable[AttemptRecord], scheduler: str, target: str | None = None) -> list[tuple[int, str]]:
    """``(attempt, job id)`` of every job ``scheduler`` accepted for an attempt of ``target``
    (attempts of another target sharing the file are left out), oldest first, each id once: the
    jobs a stop must look for, whatever became of their attempts."""
    out: dict[str, int] = {}
    for r in recs:
        jd = r.job or {}
        sid = jd.get("sched_id")
        if jd.get("scheduler") != scheduler or not isinstance(sid, str) or not sid.strip():
            continue
        if target is not None and r.target is not None and r.target != target:
            continue
        out.setdefault(sid.strip(), r.attempt)
    return [(a, sid) for sid, a in out.items()]


# --------------------------------------------------------------------------------------------
# One event as one JSON line, and back
# --------------------------------------------------------------------------------------------


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
    return (json.dumps(sanitize_data(ev), ensure_ascii=False, separators=(",", ":"), default=_json_default) + "\n").encode("utf-8")


def _jsonable(o: Any) -> Any:
    """Plain JSON data for ``o`` (to_dict() objects, enums, paths converted)."""
    if o is None:
        return None
    return json.loads(json.dumps(o, default=_json_default))


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        ev = sanitize_data(json.loads(line.decode("utf-8")))  # journal text is data: no escapes, lines capped
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return ev if isinstance(ev, dict) else None


# --------------------------------------------------------------------------------------------
# Tolerant value readers
# --------------------------------------------------------------------------------------------


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


def _outcome(v: Any) -> tuple[Outcome, str]:
    """The outcome a journal line holds, and the text as written when this version does not know it."""
    try:
        return Outcome(v), ""
    except ValueError:
        raw = _str(v)
        return Outcome.UNKNOWN, ("" if raw == Outcome.UNKNOWN.value else raw)


def _layer(v: Any) -> Layer | str | None:
    if v is None or v == "":
        return None
    try:
        return Layer(v)
    except ValueError:
        return _str(v)


def _value(v: Any) -> Any:
    return v.value if isinstance(v, Enum) else v


def _check_id(attempt: Any) -> None:
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise ValueError(f"attempt id must be a positive int, not {attempt!r}")


def _name(target: Any) -> str | None:
    if target is None:
        return None
    name = getattr(target, "name", target)
    return str(name)
