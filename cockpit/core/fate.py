"""What became of an attempt's job after its verdict: its **fate**.

A verdict is a moment; the fate is the end of the story.  The states:

``running``   the job is alive (the state every followed job starts in); layer ``gpu`` when a GPU
              is lost, or had an Xid, since the launch (:mod:`.actions.gpufault`): its cause says
              which, and that its next steps may fail;
``pending``   queued by a scheduler (Slurm), not started yet: the cause holds the reason and the
              queue position; never a failure;
``stalled``   alive, but no progress line for longer than ``[verify] stall_after`` (layer and
              evidence say where it hangs); back to ``running`` when progress resumes;
``finished``  it exited with code 0 (errors its log shows are listed in the cause as findings);
``died``      it exited otherwise, or its main process is a zombie, or its training loop died while the
              process lives on (the main thread's uncaught exception, other threads holding the
              process: :mod:`.actions.loopdeath`): ``layer`` and ``cause`` say why
              (a traceback → ``app``, a signal or exit code → ``process``, the OOM killer →
              ``container``…), ``after_s`` how long after the launch, ``last_progress`` the last
              progress line before it;
``diverged``  a metric that must stay finite (the loss, ``[metrics] required_finite``) turned NaN or
              inf while it ran on or after it exited 0 (``[verify] nonfinite = "fail"``): layer
              ``app``, the cause names the step and the line (:mod:`.actions.nonfinite`);
``stopped``   cockpit stopped it (stop, relaunch, the next attempt, a reboot);
``vanished``  its pid is gone without an exit status (a container restarted under it → layer
              ``host``).

The journal keeps the original outcome and appends each fate change as a ``fate`` event: an
outcome is never rewritten.  :class:`FateFollower` is the engine's one place that follows a job
after its verdict; a headless ``cockpit status`` calls :func:`read_fate` once to reconcile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from .actions.adopt import job_reader as reader_for  # adopted jobs too (no pid or exit file of cockpit's)
from .actions.backlog import follow_undated
from .actions.base import ActionContext
from .actions.cause import death_cause
from .actions.causebase import LOST_LOG, progress_lost
from .actions.forked import settle_leftovers
from .actions.gpufault import gpu_faults, gpu_note
from .actions.job import JobRecord
from .actions.jobstate import JobReader, LogScan
from .actions.loopdeath import confirm_loop_death, find_loop_death
from .actions.nonfinite import diverged_cause
from .actions.stall import STUCK_D_S, detect_stall, judged_stall, read_wchan, sampled_main, stall_layer, stopped_words, stuck_in_d
from .actions.survivors import gone_cause, leftovers_note, pipeline_last, pipeline_note
from .actions.verify import GONE_CONFIRM_S
from .fate_record import FATE_EVENT, FATE_STATES, FINAL_STATES, Fate, fate_text, latest_fate, same_fate, story
from .layers import Finding, Layer
from .outcome import findings_text, log_findings, said_ended, said_failed
from .probes.procs.zombies import zombie_grace
from .procstat import ProcStat
from .remote.base import RemoteError

__all__ = ["Fate", "FATE_EVENT", "FATE_STATES", "FINAL_STATES", "read_fate", "FateFollower", "fate_text", "latest_fate", "story",
           "no_gpu_check", "gpu_as_read"]

log = logging.getLogger(__name__)

GpuUtil = Callable[[], "list[float] | None"]
XidSince = Callable[[float], "str | None"]
GpuCheck = Callable[[], Awaitable["list[Finding]"]]

#: a follower reads the GPUs' faults (an nvidia-smi, the host's kernel log) at most this often
GPU_CHECK_S = 10.0


async def no_gpu_check() -> list[Finding]:
    """For a reading that wants the job's end only (stop's last look): no GPU reading."""
    return []


def gpu_as_read(seen: list[Finding] | None) -> GpuCheck | None:
    """A GPU check answering what a passing verdict's own reading found a moment ago
    (:func:`~.actions.gpufault.read_by_verdict`); None where it read none (the fate reads them)."""
    if seen is None:
        return None

    async def check() -> list[Finding]:
        return seen

    return check


async def read_fate(ctx: ActionContext, job: JobRecord, reader: JobReader | None = None, *, gpu_util: GpuUtil | None = None,
                    xid_since: XidSince | None = None, gpu_check: GpuCheck | None = None) -> Fate:
    """The job's fate now, from one reading of its processes and its (whole, or new) log.

    ``gpu_util`` gives the GPUs' utilisation from the last observation (where a stall lives).  A
    container found stopped (or gone) took the job with it: ``vanished (host)``, not a link to retry."""
    try:
        return await _read_fate(ctx, job, reader, gpu_util=gpu_util, xid_since=xid_since, gpu_check=gpu_check)
    except RemoteError as e:
        if not container_down(e) or job.scheduler:
            raise
        now = time.time()
        return Fate("vanished", "host", f"the container stopped under the job ({e.message})", now,
                    (now - job.launched_at) if job.launched_at else None, reader.scan.last_progress if reader is not None else None)


def container_down(e: RemoteError) -> bool:
    """The runtime says the job's container is not running, or no longer exists (its processes went with it)."""
    return e.layer is Layer.HOST and e.message.startswith(("container not running:", "container missing:"))


async def _read_fate(ctx: ActionContext, job: JobRecord, reader: JobReader | None = None, *, gpu_util: GpuUtil | None = None,
                     xid_since: XidSince | None = None, gpu_check: GpuCheck | None = None) -> Fate:
    fresh = reader is None
    reader = reader if reader is not None else reader_for(ctx, job)
    st = await reader.read()
    if fresh:  # a one-shot reading (status) of a backlog it cannot date follows one stall window first
        st = await follow_undated(ctx, job, reader, st)
    loop_dead = None
    if st.alive:  # alive is not running when its training loop is dead (the process held by its threads)
        st, loop_dead = await confirm_loop_death(ctx, job, reader, st)
    if st.spawned and not st.alive and not st.queued and st.exit_code is None:
        # its supervisor writes the exit status a moment after the death: look again before judging,
        # and while the supervisor has yet to reap its child, again up to [job] zombie_grace
        until = time.monotonic() + zombie_grace(ctx.cfg)
        await asyncio.sleep(GONE_CONFIRM_S)
        st = await reader.read()
        while st.reaping and time.monotonic() < until:
            await asyncio.sleep(min(GONE_CONFIRM_S, max(0.0, until - time.monotonic())))
            st = await reader.read()
    st = await settle_leftovers(reader, st)  # what the main process started may train on after its exit
    scan = reader.scan
    now = time.time()
    since = now - job.launched_at if job.launched_at else None
    if st.queued:  # in a scheduler's queue (pending): the reason and the position say why
        return Fate("pending", None, st.describe(), now, since, scan.last_progress)
    if not st.spawned and not st.exited:
        return Fate("vanished", "process", "the job's pid file is gone", now, since, scan.last_progress)
    if st.alive and loop_dead is not None:
        return Fate("died", loop_dead.layer.value, loop_dead.detail, now, loop_dead.after_s, scan.last_progress)
    diverged = diverged_cause(ctx.cfg, scan.nonfinite) if st.alive or st.exit_code == 0 else None
    if diverged is not None:
        return Fate("diverged", "app", diverged, now, since, scan.last_progress)
    if st.alive:
        lead = st.leader
        if lead is not None and lead.state[:1] in ("T", "t"):  # stopped: no progress until SIGCONT, whatever stall_after says
            return Fate("stalled", "process", f"{lead.comm} pid {lead.pid} is {stopped_words(lead.state)}", now, since, scan.last_progress)
        if lead is not None and lead.state.startswith("D") and not job.scheduler and (wchan := await _stuck(ctx, reader, lead, fresh)) is not None:
            d_layer, why = stall_layer(None, None, "D", wchan)  # stuck in the kernel: no progress whatever stall_after says
            return Fate("stalled", d_layer.value, f"{why}: {lead.comm} pid {lead.pid}, in D for {STUCK_D_S:g}s at every look",
                        now, since, scan.last_progress)
        util = gpu_util() if gpu_util else None
        stall = detect_stall(ctx.cfg.verify.stall_after, scan.clock, now, lead.state if lead else "", gpu_util=util, xid_since=xid_since)
        cpu, away = await sampled_main(ctx, reader, lead, stall)
        stall = await judged_stall(ctx, stall, scan.clock, now, lead.state if lead else "", xid_since,  # GPUs not observed: read them
                                   gpu_util=util, cpu=cpu, away=away, ended=lambda: said_ended(scan))
        if stall is not None:
            errs = scan.errors()  # a rank that crashed while the others wait for it in a collective
            seen = f"; the log's last error: {errs[-1].label[:160]}" if errs else ""
            return Fate("stalled", stall.layer.value, stall.describe() + seen, now, since, scan.last_progress)
        faults = await (gpu_check() if gpu_check is not None else gpu_faults(ctx, job.launched_at))
        if faults:  # alive and progressing, on a GPU that failed: said, so "running" is not read as healthy
            return Fate("running", "gpu", f"{st.describe()}; {gpu_note(faults)}", now, since, scan.last_progress)
        return Fate("running", None, st.describe(), now, since, scan.last_progress)
    if (gone := gone_cause(job, st, scan)) is not None:  # its launcher exited first: no exit status to read
        return Fate(gone.state, None if gone.state == "finished" else gone.layer.value, gone.detail, now, gone.after_s, scan.last_progress)
    loop = find_loop_death(scan)
    if st.exit_code == 0 and not (pipeline_last(job.command or ctx.cfg.job.command) and loop is not None):
        # exit 0 is the job's own word that it finished: errors it logged on the way (handled, or a
        # thread's) are findings in the cause, never a death "with code 0"; but a pipeline's 0 is its
        # last command's (tee), and a traceback that ended the trainer's log is the trainer's death.
        # A loop that ended on an error (a traceback from the entry point, no progress after it) is
        # said as such: the 0 then came from the code that caught it, or from a thread's os._exit(0)
        ago = st.exit_ago()
        after = (now - ago - job.launched_at) if (ago is not None and job.launched_at) else since
        notes = (f"its training loop ended on an error first: {loop.match.label[:160]}" if loop is not None
                 else findings_text(log_findings(scan, errors=True)))
        if not notes and (said := said_failed(scan)):  # it caught its error, said so and exited 0
            notes = f"its last line: {said}"
        lost = progress_lost(job, scan)  # its log emptied since progress was seen in it: not "before any progress"
        before = f"; {LOST_LOG}" if lost else " before any progress line" if scan.progress_re is not None and scan.progress_line is None else ""
        return Fate("finished", None, "exited with code 0" + before + short_of_total(scan, ctx.cfg.metrics.total_steps) + leftovers_note(st)
                    + pipeline_note(job.command or ctx.cfg.job.command) + (f"; {notes}" if notes else ""),
                    now, after, scan.last_progress)
    cause = await death_cause(ctx, job, st, scan)
    state = cause.state if cause.state in FATE_STATES else "died"
    # a stopped job (a scheduler's CANCELLED) is no failure: no layer, as cockpit's own stop and
    # the stop stage's reading of Slurm record it, so every reader tells the same story
    layer = None if state in ("stopped", "finished") else cause.layer.value
    return Fate(state, layer, cause.detail, now, cause.after_s if cause.after_s is not None else since, scan.last_progress)


async def _stuck(ctx: ActionContext, reader: JobReader, lead: ProcStat, fresh: bool) -> str | None:
    """The wait channel of a main process stuck in ``D`` (None: not for sure): in ``D`` at every reading
    for ``STUCK_D_S``, or, for a one-shot reading (``cockpit status``), at every look over that long."""
    held = reader.d_since
    if held is not None and time.monotonic() - held[2] >= STUCK_D_S:
        return await read_wchan(ctx, lead)
    return await stuck_in_d(ctx, lead) if fresh else None


def short_of_total(scan: LogScan, configured: int = 0) -> str:
    """`` at step 40 of 1000, before the end its progress lines announce`` for a job that exited 0
    well short of its total (``step 40/1000``, a progress bar, ``[metrics] total_steps``); else "".

    Still ``finished``: exit 0 is the job's own word, and early stopping ends runs on purpose; but
    an error the code caught before ``sys.exit(0)`` or an ``os._exit(0)`` ends them too, so the
    fate says where it ended instead of letting "finished" read as "trained to the end"."""
    m = getattr(scan.metrics, "metrics", None)
    if m is None:
        return ""
    total = m.total(configured)
    done = m.progress[0] if m.progress is not None and configured <= 0 else m.last_step
    if not total or done is None or done + 1 >= total:  # a last step of N-1 (counted from 0) is the end
        return ""
    return f" at step {done:g} of {total}, before the end its progress lines announce"


def stopped_fate(job: JobRecord, how: str, last_progress: str | None = None) -> Fate:
    """The job stopped (by cockpit, a reboot, a scheduler's cancel), with the last progress line
    read before it was (None: none read)."""
    now = time.time()
    return Fate("stopped", None, how, now, (now - job.launched_at) if job.launched_at else None, last_progress)


#: a follower's reading of "running" younger than this spares stop its own reading first: stop's
#: process table says whether the job still runs, and the job is read only when its leader is gone
#: (a divergence logged in this last moment is then told as a stop by cockpit, not as diverged)
FRESH_S = 1.0


class FateFollower:
    """Follows one attempt's job after its verdict until a final fate; calls ``on_fate`` on each change.

    One follower at a time per engine: following a new job cancels the old follower (its job is
    then stopped or reconciled by whoever launched the new one).
    """

    def __init__(self, ctx: ActionContext, attempt: int, job: JobRecord, reader: JobReader | None,
                 on_fate: Callable[[int, Fate], None], *, interval: float, last: Fate | None = None,
                 gpu_util: GpuUtil | None = None, xid_since: XidSince | None = None,
                 gpu_seen: list[Finding] | None = None) -> None:
        self.ctx, self.attempt, self.job = ctx, attempt, job
        self.gpu_util, self.xid_since = gpu_util, xid_since
        self.reader = reader if reader is not None else reader_for(ctx, job)
        self.on_fate, self.interval = on_fate, interval
        self.last = last
        #: the latest reading (changed or not) and its monotonic time: a fresh one spares stop a reading
        self.checked: Fate | None = None
        self.checked_at = 0.0
        self.task: asyncio.Task[None] | None = None
        # the last GPU check (monotonic time, faults): the verdict's own reading, when it made one
        self._gpu: tuple[float, list[Finding]] | None = None if gpu_seen is None else (time.monotonic(), gpu_seen)

    async def _gpu_check(self) -> list[Finding]:
        """The GPUs' faults since the launch, read again only every :data:`GPU_CHECK_S` (a fault found stays)."""
        now = time.monotonic()
        if self._gpu is None or (not self._gpu[1] and now - self._gpu[0] >= GPU_CHECK_S):
            self._gpu = (now, await gpu_faults(self.ctx, self.job.launched_at))
        return self._gpu[1]

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._run(), name=f"fate-{self.attempt}")

    def running_now(self, job: JobRecord, within: float) -> bool:
        """Its job was read running (not stalled) less than ``within`` seconds ago."""
        f = self.checked
        return (self.job is job and f is not None and f.state == "running" and not f.final
                and time.monotonic() - self.checked_at < within)

    async def cancel(self) -> None:
        """Cancel the follower and wait for it to end. A cancellation of the caller itself is
        raised, never swallowed: a closing event loop cancels each task once, and a task that went
        on after it would hold the loop's close forever."""
        task, self.task = self.task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _report(self, fate: Fate) -> None:
        if same_fate(self.last, fate):
            return
        self.last = fate
        self.on_fate(self.attempt, fate)

    async def check(self) -> Fate | None:
        """One reading; reports a change.  None when the target could not be read this time."""
        try:
            fate = await read_fate(self.ctx, self.job, self.reader, gpu_util=self.gpu_util, xid_since=self.xid_since,
                                   gpu_check=self._gpu_check)
        except RemoteError as e:  # a dropped link is not a death: try again next tick
            log.info("fate of attempt %s: target unreachable (%s); retrying", self.attempt, e.message)
            return None
        self.checked, self.checked_at = fate, time.monotonic()
        self._report(fate)
        return fate

    async def _run(self) -> None:
        interval = min(0.25, self.interval)
        while True:
            fate = await self.check()
            if fate is not None and fate.final:
                return
            await asyncio.sleep(interval)
            interval = min(self.interval, interval * 2)
