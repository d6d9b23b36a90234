"""Where a starting job's ``[job] startup_timeout`` counts from (``[verify] startup_timeout_from``,
docs/compile.md), and verify's words when it runs out with no progress.

``"launch"`` (the default): from the job's launch.  ``"first_compile"``: from the end of the job's
first torch.compile, as the trace the engine follows (:mod:`..compile_follow`) shows it:

- no compile started yet: launch + startup_timeout, as with ``"launch"`` (a job that never
  compiles is judged as before);
- a compile started and none has ended: the job is *compiling*, pending until launch +
  ``[verify] compile_timeout`` (never sooner than launch + startup_timeout), then it fails "still
  compiling `f` …" (app);
- the first compile ended (its ``compilation_metrics``): that end + startup_timeout.

The end is dated against the trace's newest line (the glog times of the job's own clock, so a
clock skew between the target and cockpit does not count): seen live, it is the moment cockpit
read it.  A trace that is off or not read (no follower, its filter not running) is said in the
stage's detail, and the clock counts from launch.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..compile import shell_command
from ..compile_follow import Compiling, LiveCompile, follower_for
from ..compile_report import compiling_words
from ..layers import Evidence, Layer
from ..remote.base import RemoteError
from .base import StageFailed
from .causebase import fmt_secs

if TYPE_CHECKING:  # pragma: no cover
    from ..remote.base import Transport
    from .jobrecord import JobRecord
    from .jobstate import LogScan

__all__ = ["Deadline", "StartupClock", "FIRST_COMPILE"]

FIRST_COMPILE = "first_compile"
#: seconds a whole read of a trace not followed may take, and between two of them
WHOLE_READ_S = 10.0
WHOLE_EVERY_S = 5.0
CACHE_ADVICE = "warm the compile caches (keep TORCHINDUCTOR_CACHE_DIR between runs), or compile less (mode, dynamic shapes)"


@dataclass(frozen=True)
class Deadline:
    """The startup deadline now: ``at`` (epoch), the wait's start ``since`` and length ``span_s``
    (a display draws the bar), ``phase`` (``launch``, ``fallback``, ``not compiled``,
    ``compiling``, ``compiled``), the compiles under way and what the stage's detail adds."""

    at: float
    since: float
    span_s: float
    phase: str = "launch"
    busy: list[Compiling] = field(default_factory=list)
    note: str = ""

    def within(self, startup: float) -> str:
        """``startup_timeout (300s)``, with where it counted from when not the launch."""
        if self.phase == "compiling":
            return f"compile_timeout ({self.span_s:g}s) after launch, the first compile not ended"
        if self.phase == "compiled":
            return f"startup_timeout ({startup:g}s) after the first compile ended"
        return f"startup_timeout ({startup:g}s)"

    def waiting(self, what: str) -> str:
        """The progress stage's words while it waits for ``what``."""
        if self.busy:  # the first compile, or a later one (another frame, the backward) after it
            c = self.busy[0]
            return f"{compiling_words(c.function, c.where, c.seconds).removeprefix('still ')}; then {what}; {self.note}"
        return f"{what}; {self.note}" if self.note else what


class StartupClock:
    """The startup deadline of one verify, asked each tick (:meth:`at`): what the trace showed is
    kept (a restarted filter reads the trace afresh; the first compile's end stays as first seen)."""

    def __init__(self, cfg: Any, transport: Transport, job: JobRecord, started: float) -> None:
        self.first = cfg.verify.startup_timeout_from == FIRST_COMPILE
        self.startup = float(cfg.job.startup_timeout)
        self.bound = max(float(cfg.verify.compile_timeout), self.startup)
        self.transport, self.trace_dir, self.started = transport, job.trace_dir, started
        self.compile_started = False
        self.first_end: float | None = None
        self.busy: list[Compiling] = []
        #: the trace read whole once (no follower up at the deadline), and why it could not be
        self.whole: LiveCompile | None = None
        self.unread = ""
        self.read_at: float | None = None
        self.seen: dict[tuple[str, str], tuple[float, float]] = {}

    def live(self) -> tuple[LiveCompile | None, str]:
        """The job's trace as followed now (else as read whole once), or why there is none."""
        if not self.trace_dir:
            return None, "the job writes no torch.compile trace ([compile] trace is off)"
        fol = follower_for(self.transport, self.trace_dir)
        if fol is not None and fol.caught_up:  # a filter still reading the trace so far proves no absence
            return fol.live, ""
        if self.whole is not None:
            return self.whole, ""
        if fol is None:
            return None, self.unread or f"its torch.compile trace ({self.trace_dir}) is not followed"
        if fol.state in ("starting", "following") and not self.unread:  # up, not yet through the trace so far
            return None, "its torch.compile trace's filter is starting"
        return None, self.unread or f"its torch.compile trace ({self.trace_dir}) is not read: {fol.last_death or 'the filter is ' + fol.state}"

    async def at(self, now: float) -> Deadline:
        """The deadline as the trace shows things at ``now`` (epoch).  A trace not followed (yet) once
        the deadline from launch is at stake (a verify started late, ``cockpit verify``, no channel to
        spare for the follower) is read whole instead, every :data:`WHOLE_EVERY_S` s."""
        launch = Deadline(self.started + self.startup, self.started, self.startup)
        if not self.first:
            return launch
        live, why = self.live()
        if (live is None or live is self.whole) and self.trace_dir and now >= launch.at and \
                (self.read_at is None or time.monotonic() - self.read_at >= WHOLE_EVERY_S):
            live, why = await self._read_whole()
        if live is not None:
            self._observe(live, now)
        elif not self.compile_started:
            return replace(launch, phase="fallback", note=f"startup_timeout counts from launch: {why}")
        if self.first_end is not None:
            return Deadline(self.first_end + self.startup, self.first_end, self.startup, "compiled", list(self.busy),
                            f"the first compile ended {fmt_secs(self.first_end - self.started)} after launch: "
                            "startup_timeout counts from there")
        if self.compile_started:
            return Deadline(self.started + self.bound, self.started, self.bound, "compiling", list(self.busy),
                            f"startup_timeout counts from the end of the first compile (compile_timeout {self.bound:g}s after launch)")
        return replace(launch, phase="not compiled", note="no compile started yet: startup_timeout counts from launch")

    async def _read_whole(self) -> tuple[LiveCompile | None, str]:
        """The trace read once, whole, by the filter (a few KB over the link)."""
        self.read_at = time.monotonic()
        try:
            res = await self.transport.run(shell_command(self.trace_dir, once=True) + " 2>/dev/null", timeout=WHOLE_READ_S)
        except (RemoteError, asyncio.TimeoutError) as e:
            self.unread = f"its torch.compile trace ({self.trace_dir}) could not be read: {e}"
            return None, self.unread
        if not res.ok:
            why = f"timed out after {WHOLE_READ_S:g}s" if res.timed_out else f"the filter's exit status {res.exit_code}"
            self.unread = f"its torch.compile trace ({self.trace_dir}) could not be read ({why})"
            return None, self.unread
        self.whole = LiveCompile()
        self.whole.feed(res.stdout)
        self.whole.close()
        return self.whole, ""

    def _observe(self, live: LiveCompile, now: float) -> None:
        self.busy = _whole_busy(live, self.seen) if live is self.whole else live.compiling()
        if live.starts or self.busy:
            self.compile_started = True
        if self.first_end is not None:
            return
        ends = [s.end for s in live.builder.spans.values() if s.end is not None]
        if ends:
            lag = max(0.0, live.last_t - min(ends))  # the trace's newest line is (about) now
            self.first_end = now - min(lag, now - self.started)
            self.compile_started = True
        elif any(f.compiles or f.limit_hit or f.failures for f in live.builder.frames.values()):
            self.first_end, self.compile_started = now, True  # a compilation_metrics without its start

    def busy_now(self) -> list[Compiling]:
        """The compiles under way now (any mode), the longest first."""
        live, _ = self.live()
        if live is None:
            return list(self.busy)
        return _whole_busy(live, self.seen) if live is self.whole else live.compiling()


def _whole_busy(live: LiveCompile, seen: dict[tuple[str, str], tuple[float, float]]) -> list[Compiling]:
    """The compiles under way in a trace read whole: from its start to the trace's newest line when
    first read, plus the time since (``seen`` keeps both per compile across reads)."""
    now, out = time.monotonic(), []
    for key, (fn, where, start, _, _) in live.starts.items():
        span = live.builder.spans.get(key)
        if span is not None and span.end is None:
            base, at = seen.setdefault(key, (max(0.0, live.last_t - start), now))
            out.append(Compiling(fn, where, base + now - at))
    return sorted(out, key=lambda c: -c.seconds)


def no_progress(dl: Deadline, busy: list[Compiling], startup: float, evidence: Evidence, scan: LogScan | None = None,
                pattern: str | None = None) -> StageFailed:
    """The progress stage's failure at the deadline: still compiling (which frame), progress the
    pattern does not match (:func:`unmatched_progress`), or no progress."""
    note = f"; {dl.note}" if dl.phase == "fallback" else ""
    if busy:
        c = busy[0]
        if dl.phase == "compiling":
            advice = ("torch.compile is still at work after [verify] compile_timeout: raise it if the model needs longer to compile, "
                      f"{CACHE_ADVICE}; a compile that never ends may be stuck (cockpit stacks shows where)")
        else:
            advice = f"torch.compile is still at work: raise [job] startup_timeout, {CACHE_ADVICE}"
            if dl.phase == "launch":
                advice += "; or count startup_timeout from the first compile's end ([verify] startup_timeout_from = \"first_compile\")"
        return StageFailed(Layer.APP, f"{compiling_words(c.function, c.where, c.seconds)}: no progress marker within {dl.within(startup)}{note}",
                           evidence=evidence, advice=advice, data={"compiling": [asdict(x) for x in busy[:4]]})
    if scan is not None and pattern and (missed := unmatched_progress(scan, pattern, dl.within(startup))) is not None:
        return missed
    lines = f" ({scan.lines} log lines, none matching /{pattern}/)" if scan is not None and pattern else ""
    elsewhere = ("; if it reports progress somewhere else (another file, another format), point [job] log or "
                 "[job] progress_pattern at it") if lines else ""
    return StageFailed(Layer.APP, f"alive but no progress marker within {dl.within(startup)}{lines}{note}", evidence=evidence,
                       advice="is the job hung (stuck compiling, deadlocked threads)? check the process pane and py-spy" + elsewhere)


def unmatched_progress(scan: LogScan, pattern: str, within: str) -> StageFailed | None:
    """The log counts steps (the metrics reader saw the step move: ``iter 120 loss 2.3``) while no
    line matches ``[job] progress_pattern``: the job progresses and the pattern misses it, which is
    the config's failure, not the code's (``config``: the fix was never judged).  None when the log
    shows no moving step (a job that prints but does not train yet is still the app's)."""
    m = getattr(scan.metrics, "metrics", None)
    first, last = (m.clock.first, m.clock.last) if m is not None else (None, None)
    if first is None or last is None or last[1] <= first[1]:
        return None
    example = next((ln for ln in reversed(scan.tail_lines) if ln.strip()), "")[:160]
    return StageFailed(Layer.CONFIG, f"the log shows the job stepping (step {last[1]:g}) but no line matches [job] progress_pattern "
                       f"/{pattern}/ within {within}: the last line is '{example}'",
                       advice="set [job] progress_pattern to a regex that matches the job's progress lines (the metrics pane reads them "
                       "already), or point [job] log at the file that has them", data={"step": last[1], "pattern": pattern})
