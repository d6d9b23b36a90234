"""The failure-layer vocabulary: Layer, Status, Stage, Verdict, Outcome, Finding.

Everything cockpit checks ends up as a :class:`Stage` inside a :class:`Verdict`, and every
stage names the :class:`Layer` it checked.  The layer of the *first* failing stage is the
verdict's layer; stages after it are ``not reached`` (never ``ok``).  An attempt's
:class:`Outcome` follows from what ran (:func:`outcome_of`): ``failed`` when the job's code ran
and failed, whatever the layer (an exit code or a signal in ``process``, a full disk in
``container``, ``gpu``, ``app``); ``untested`` only when the code never got to run.  That
difference is the reason cockpit exists (see docs/reliability.md).

Everything here is plain data that round-trips through JSON (``to_dict`` / ``from_dict``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .text import LINE_CAP, sanitize

__all__ = [
    "Layer",
    "Status",
    "Outcome",
    "Evidence",
    "Stage",
    "Verdict",
    "GPU_NOTE_STAGE",
    "Finding",
    "Severity",
    "outcome_of",
    "Ran",
    "tail",
]


class Layer(str, Enum):
    """Where a failure lives, ordered from the bottom of the stack to the top."""

    CONFIG = "config"
    SSH = "ssh"
    HOST = "host"
    CONTAINER = "container"
    PROCESS = "process"
    GPU = "gpu"
    APP = "app"

    @property
    def rank(self) -> int:
        return _LAYER_ORDER.index(self)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Layer):
            return NotImplemented
        return self.rank < other.rank

    def __str__(self) -> str:
        return self.value


_LAYER_ORDER = list(Layer)

#: One-word description of each layer, for help texts and the README.
LAYER_MEANING = {
    Layer.CONFIG: "cockpit's own input",
    Layer.SSH: "reaching the host",
    Layer.HOST: "the hypervisor / container runtime",
    Layer.CONTAINER: "the OS inside the container",
    Layer.PROCESS: "the job's lifecycle",
    Layer.GPU: "driver and device",
    Layer.APP: "the training code",
}


class Status(str, Enum):
    """The status of one stage."""

    OK = "ok"
    FAIL = "fail"
    SKIPPED = "skipped"
    PENDING = "pending"
    NOT_REACHED = "not reached"
    RUNNING = "running"

    def __str__(self) -> str:
        return self.value


class Outcome(str, Enum):
    """The honest result of one attempt."""

    PASSED = "passed"
    FAILED = "failed"
    UNTESTED = "untested"
    INTERRUPTED = "interrupted"
    RUNNING = "running"
    #: the job waits in a scheduler's queue (Slurm PENDING): never ran, so neither passed nor failed
    PENDING = "pending"
    #: read from a journal line that holds no outcome, or one this version does not know (a newer
    #: cockpit's): the record keeps the text as written (``AttemptRecord.outcome_raw``)
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


class Severity(str, Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


def _clean(text: Any, *, overprint: bool = False) -> Any:
    """Remote text entering a stage, its evidence or a finding: sanitised, lines capped."""
    return sanitize(text, LINE_CAP, newlines=True, overprint=overprint) if isinstance(text, str) else text


def tail(data: bytes | str | None, limit: int = 2000) -> str:
    """The last ``limit`` characters of ``data`` as text (invalid UTF-8 replaced)."""
    if data is None:
        return ""
    if isinstance(data, bytes):
        data = data[-limit * 4 :].decode("utf-8", "replace")
    return data[-limit:]


@dataclass
class Evidence:
    """The raw proof behind a stage: what ran, how it ended, what it said."""

    command: str = ""
    exit_code: int | None = None
    output: str = ""

    def __post_init__(self) -> None:
        # remote output is data: no escape sequence reaches a terminal or the journal raw
        self.command = _clean(self.command)
        self.output = _clean(self.output, overprint=True)

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, "exit_code": self.exit_code, "output": self.output}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evidence:
        return cls(command=d.get("command", ""), exit_code=d.get("exit_code"), output=d.get("output", ""))


@dataclass
class Stage:
    """One check inside an action."""

    name: str
    status: Status
    layer: Layer
    detail: str = ""
    evidence: Evidence | None = None
    started_at: float = field(default_factory=time.time)
    duration_s: float = 0.0
    advice: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.detail, self.advice = _clean(self.detail), _clean(self.advice)

    @property
    def failed(self) -> bool:
        return self.status is Status.FAIL

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "status": self.status.value,
            "layer": self.layer.value,
            "detail": self.detail,
            "started_at": round(self.started_at, 3),
            "duration_s": round(self.duration_s, 4),
        }
        if self.advice:
            d["advice"] = self.advice
        if self.evidence is not None:
            d["evidence"] = self.evidence.to_dict()
        if self.data:
            d["data"] = self.data
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Stage:
        ev = d.get("evidence")
        return cls(
            name=d["name"],
            status=Status(d["status"]),
            layer=Layer(d["layer"]),
            detail=d.get("detail", ""),
            evidence=Evidence.from_dict(ev) if ev else None,
            started_at=d.get("started_at", 0.0),
            duration_s=d.get("duration_s", 0.0),
            advice=d.get("advice", ""),
            data=d.get("data", {}) or {},
        )


@dataclass
class Verdict:
    """An action's result: its stages in order; its layer is that of the first failing stage."""

    action: str
    stages: list[Stage] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None

    def add(self, stage: Stage) -> Stage:
        self.stages.append(stage)
        return stage

    def extend(self, stages: Iterable[Stage]) -> None:
        for s in stages:
            self.add(s)

    @property
    def failed_stage(self) -> Stage | None:
        return next((s for s in self.stages if s.status is Status.FAIL), None)

    @property
    def ok(self) -> bool:
        return self.failed_stage is None and not self.pending

    @property
    def pending(self) -> bool:
        return any(s.status in (Status.PENDING, Status.RUNNING) for s in self.stages)

    @property
    def layer(self) -> Layer | None:
        st = self.failed_stage
        return st.layer if st else None

    @property
    def duration_s(self) -> float:
        end = self.finished_at if self.finished_at is not None else time.time()
        return max(0.0, end - self.started_at)

    def not_reached(self, names: Iterable[tuple[str, Layer]]) -> None:
        """Append the stages that a failure prevented, marked ``not reached``."""
        for name, layer in names:
            self.add(Stage(name, Status.NOT_REACHED, layer, "not reached: an earlier stage failed"))

    def finish(self) -> Verdict:
        self.finished_at = time.time()
        return self

    def gpu_fault_stage(self) -> Stage | None:
        """The ok stage a passing verify adds for a GPU fault while the job runs (:data:`GPU_NOTE_STAGE`,
        ``verify: gpu`` in an attempt's verdict), if it added one."""
        return next((s for s in self.stages if s.status is Status.OK and s.name.split(": ")[-1] == GPU_NOTE_STAGE), None)

    def summary(self) -> str:
        st = self.failed_stage
        if st is None:
            if self.pending:
                return f"{self.action}: pending"
            # a GPU lost (or an Xid) while the job runs on: passed, and said in the same line
            note = self.gpu_fault_stage()
            return f"{self.action}: ok, but {note.detail}" if note is not None and note.detail else f"{self.action}: ok"
        return f"{self.action}: {st.layer.value} failed at {st.name}: {st.detail}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "ok": self.ok,
            "layer": self.layer.value if self.layer else None,
            "summary": self.summary(),
            "started_at": round(self.started_at, 3),
            "finished_at": round(self.finished_at, 3) if self.finished_at else None,
            "duration_s": round(self.duration_s, 4),
            "stages": [s.to_dict() for s in self.stages],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        return cls(
            action=d["action"],
            stages=[Stage.from_dict(s) for s in d.get("stages", [])],
            started_at=d.get("started_at", 0.0),
            finished_at=d.get("finished_at"),
        )


#: the ok stage a passing verify adds when a GPU fault happened while the job runs
GPU_NOTE_STAGE = "gpu"


#: Stages whose failure happens after the job started: a GPU failure there is the code's run failing.
_AFTER_START = {"alive", "log created", "log growing", "progress", "healthy", "verify"}


#: the layers where a job whose code ran fails as its own run: below them (the host restarting the
#: container under it, a lost link) the infrastructure cut the run short, not the code
_RAN_LAYERS = {Layer.CONTAINER, Layer.PROCESS, Layer.GPU, Layer.APP}


@dataclass(frozen=True)
class Ran:
    """What the job's log says about whether its code ran (:func:`cockpit.core.outcome.code_ran`)."""

    #: progress lines seen
    progress: int = 0
    #: lines the job itself wrote (the shell's own crash and not-found lines left out)
    lines: int = 0

    @property
    def ran(self) -> bool:
        """Progress, or output past a first line (a one-line log is often the shell or the
        interpreter saying the code could not start: ``python3: can't open file``)."""
        return self.progress > 0 or self.lines >= 2


def outcome_of(verdict: Verdict, *, job_started: bool | None = None, ran: Ran | None = None) -> Outcome:
    """An attempt's verdict as an :class:`Outcome`: the one place that decides it.

    In order: nothing failed → ``passed`` (``pending`` while a stage still waits: a job queued by
    a scheduler when verify's ``queue_wait`` ran out); the connection stayed lost → ``interrupted``
    (the job runs on, unjudged); a failure in ``app`` → ``failed``; the job started and its code
    ran (``ran``: progress, or its own output past a first line) → ``failed`` at any layer of the
    job's own (a signal or exit code in ``process``, a full disk in ``container``, ``gpu``); a
    ``gpu`` failure after the start → ``failed``; anything else → ``untested``: the code never got
    to run (or ``host``/``ssh`` cut it short: a container restarted under it), the fix was never
    tried.
    """
    st = verdict.failed_stage
    if st is None:
        return Outcome.PENDING if verdict.pending else Outcome.PASSED
    if st.data.get("lost"):
        return Outcome.INTERRUPTED
    if st.layer is Layer.APP:
        return Outcome.FAILED
    started = job_started if job_started is not None else st.name in _AFTER_START
    if started and ran is not None and ran.ran and st.layer in _RAN_LAYERS:
        return Outcome.FAILED
    if st.layer is Layer.GPU and started:
        return Outcome.FAILED
    return Outcome.UNTESTED


@dataclass
class Finding:
    """Something an observation noticed: a zombie, a hung GPU, a crash in the log."""

    layer: Layer
    kind: str  # short machine id, e.g. "zombie", "gpu-driver", "oom-kill"
    summary: str  # one line a person reads first
    advice: str = ""  # one line: what to do about it
    severity: Severity = Severity.WARNING
    subject: dict[str, Any] = field(default_factory=dict)  # pid, gpu index, log line, ...

    def __post_init__(self) -> None:
        self.summary, self.advice = _clean(self.summary), _clean(self.advice)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer.value,
            "kind": self.kind,
            "summary": self.summary,
            "advice": self.advice,
            "severity": self.severity.value,
            "subject": self.subject,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            layer=Layer(d["layer"]),
            kind=d["kind"],
            summary=d["summary"],
            advice=d.get("advice", ""),
            severity=Severity(d.get("severity", "warning")),
            subject=d.get("subject", {}) or {},
        )
