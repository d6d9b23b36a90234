"""A cause (why a job is not healthy) and the pieces of one every judge shares: the type, how a
duration reads (:func:`fmt_secs`), when a death happened (:func:`_when`), and the log's errors as
a cause (:func:`error_cause`).  A leaf of the actions: :mod:`.cause` builds the full explanation
on it, and the stall clock, the survivors and the schedulers use it without importing the judges.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..layers import Layer
from ..probes.sig_table import TRACEBACK
from ..probes.text import fmt_secs

if TYPE_CHECKING:  # pragma: no cover
    from ..probes.sig_model import Match
    from .jobreading import JobState
    from .jobrecord import JobRecord
    from .logscan import LogScan

__all__ = ["Cause", "fmt_secs", "error_cause", "named_first", "progress_lost", "LOST_LOG"]

#: what a judge says of a log that holds no progress line now where an earlier reading saw one
LOST_LOG = "an earlier reading saw progress in its log, which holds none now (truncated, rotated or replaced since)"


def progress_lost(job: JobRecord, scan: LogScan) -> bool:
    """An earlier reading of the job (the launching cockpit's verify, journalled with the job) saw a
    progress line in its log, and the log holds none now.  A later cockpit that found the log emptied
    by a rotation after the job's end said "no progress line before it" and "no traceback in the
    log" of what it could no longer read, and failed an exit 0 as a death."""
    return job.main_progressed and scan.progress_re is not None and scan.progress_line is None

#: the kind of a traceback no signature recognised (labelled with its own exception line)
GENERIC_KIND = TRACEBACK.kind
#: exceptions that only a signal raises: the traceback is the code being unwound from outside
#: (``kill -INT``, a launcher or an agent stopping its workers; a job under cockpit has no
#: terminal for a Ctrl-C), not the training code failing
INTERRUPTS = ("KeyboardInterrupt",)
INTERRUPT_ADVICE = "something sent the job SIGINT (kill -INT, a launcher or an agent stopping it): the code did not fail by itself"


@dataclass
class Cause:
    """Why the job is not healthy: a layer, one line, advice, and the evidence as data."""

    layer: Layer
    detail: str
    advice: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    #: "died" (exit status written), "vanished" (gone without one), "unhealthy" (alive but failing)
    state: str = "died"
    #: seconds from the launch to the death (None when unknown)
    after_s: float | None = None
    #: "12.3s after launch; last progress: step 52 …" (kept apart: a fate has its own fields for it)
    when: str = ""

    @property
    def full(self) -> str:
        """The detail with when it happened, as a verdict's stage shows it."""
        return f"{self.detail} ({self.when})" if self.when else self.detail


def _when(job: JobRecord, st: JobState, scan: LogScan) -> tuple[float | None, str]:
    """Seconds from launch to death, and a phrase saying so with the last progress line.  With no
    exit status (the job vanished), its last sign of life: its log's last write, by the target's
    clock (a reading hours later must not age it to that reading)."""
    ago = st.exit_ago()
    after = None
    if job.launched_at and ago is not None:
        after = max(0.0, time.time() - ago - job.launched_at)
    parts = []
    if after is not None:
        parts.append(f"{fmt_secs(after)} after launch")
    elif job.launched_at and st.exit_code is None and st.log_mtime is not None and st.remote_now is not None:
        after = max(0.0, time.time() - max(0.0, st.remote_now - st.log_mtime) - job.launched_at)
        parts.append(f"its log's last write {fmt_secs(after)} after launch")
    parts.append(f"last progress: {scan.last_progress[:120]}" if scan.last_progress else LOST_LOG if progress_lost(job, scan)
                 else "no progress line before it")
    return after, "; ".join(parts)


def _exc_type(m: Match) -> str:
    line = m.exceptions[-1] if m.exceptions else m.label
    return line.split(":", 1)[0].strip()


def named_first(errs: list[Match]) -> Match:
    """The error that names the failure: the first, unless it is a bare traceback (no signature
    knew it) of a dying thread and a later thread's death with the same exception type was
    recognised.  Threads that write unlocked cut each other's lines, so the first traceback's
    exception line can arrive cut (``RuntimeError: Detect``) while a sibling's arrives whole:
    the same failure, and the sibling's name is the one that helps."""
    first = errs[0]
    if first.signature.kind != GENERIC_KIND or first.thread is None:
        return first
    kind = _exc_type(first)
    for m in errs[1:]:
        if m.signature.kind != GENERIC_KIND and m.thread is not None and m.severity == first.severity and _exc_type(m) == kind:
            return m
    return first


def survived(scan: LogScan) -> list[Match]:
    """The errors the job trained past: progress lines came after them (a retry loop's printed
    traceback, a handled failure), so whatever ended the job later, it was not one of these."""
    return [e for e in scan.errors() if _trained_past(scan, e)]


def _trained_past(scan: LogScan, e: Match) -> bool:
    return (e.traceback_start or e.line_no) < scan.progress_no


def error_cause(scan: LogScan, *, death: bool = False) -> Cause | None:
    """The log's error signatures as one cause: the first error, and every thread that died.
    ``death``: the cause of the job's end, so the errors it trained past (:func:`survived`) are
    not it; only said, as how many came before."""
    errs = scan.errors()
    past = [e for e in errs if _trained_past(scan, e)] if death else []
    errs = [e for e in errs if e not in past]
    if not errs:
        return None
    first = named_first(errs)
    threads = scan.dead_threads()
    who = ""
    if threads:
        who = (f"thread {threads[0]} died" if len(threads) == 1 else f"threads {', '.join(threads)} died") + ": "
    more = f" (+{len(errs) - 1} more error{'s' if len(errs) > 2 else ''})" if len(errs) > 1 and not threads else ""
    more += f" ({trained_past(past)})" if past else ""
    data: dict[str, Any] = {"first_error": scan.error(), "final_error": scan.final_error(), "dead_threads": threads, "errors": len(errs)}
    if past:
        data["survived_errors"] = len(past)
    behind = scan.nccl.behind() if first.kind.startswith("nccl") else ""
    if behind:
        data["nccl"] = behind
    if _exc_type(first) in INTERRUPTS and first.kind == GENERIC_KIND:  # a signal unwound the code: it did not fail
        return Cause(Layer.PROCESS, f"{who}{first.label}{more} (a signal unwound the code: no failure of its own)", INTERRUPT_ADVICE, data, state="unhealthy")
    return Cause(first.layer, f"{who}{first.label}{more}" + (f"; {behind}" if behind else ""), first.advice, data, state="unhealthy")


def trained_past(past: list[Match]) -> str:
    """How a cause mentions the errors the job trained past: how many, and the first's name."""
    n = len(past)
    return f"after {'an earlier error' if n == 1 else f'{n} earlier errors'} it trained past: {past[0].label[:120]}"
