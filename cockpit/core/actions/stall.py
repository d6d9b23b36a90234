"""A job that stops making progress is not healthy: stall detection from its progress lines.

:class:`~.progressclock.ProgressClock` keeps when progress lines arrived, dated by read (its
median interval between steps is the job's own rhythm, not cockpit's polling).

``[verify] stall_after``: ``"auto"`` (the default) is the larger of 10× the median interval and
120 s; a number of seconds sets it; ``0`` turns stall detection off.  A job whose last progress
line is older than that, and that is still alive, is **stalled**.  The time of a progress line is
when it was read, or the time the line itself says for a backlog read late; never the log file's
mtime, which any other line (a heartbeat) keeps fresh (:mod:`.backlog`).  A job whose steps are merely
slow (a long evaluation every N steps) raises the median and stays within the threshold.

:func:`stall_layer` says where a stall lives, from evidence cockpit already has: GPU utilisation
(all of the job's GPUs idle → a Python-side wait, ``app``; busy with no progress → a device-side
hang, ``gpu``), an Xid in the host kernel log since the stall began (``gpu``), the job's main
process stuck in ``D`` (``process``, or ``gpu`` when its wait channel names the NVIDIA driver), its
main thread spinning on the CPU while every GPU is idle (``app``: a loop that no longer prints, not a
wait; :func:`sample_main`), its stdout and stderr gone elsewhere than the log (``app``: its progress is
written where cockpit does not read).
"""

from __future__ import annotations

import shlex
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..layers import Layer
from ..probes.gpu.findings import diagnose
from ..procstat import ProcStat, output_kind, read_stat
from ..remote.base import RemoteError
from .causebase import fmt_secs
from .progressclock import ProgressClock

if TYPE_CHECKING:
    from .base import ActionContext
    from .jobstate import JobReader

__all__ = ["ProgressClock", "Stall", "detect_stall", "stuck_count", "stall_threshold", "stall_layer", "stall_unknown", "read_gpus", "AUTO_FLOOR_S",
           "AUTO_FACTOR", "judged_stall", "stopped_words", "sample_main", "stuck_in_d", "read_wchan", "sampled_main"]

AUTO_FLOOR_S = 120.0
AUTO_FACTOR = 10.0
#: a count in the progress lines is judged only after it changed this often (its first value counted)
COUNT_CHANGES = 4
#: ... and when at least this many progress lines since its last change repeat it (lines still come)
COUNT_REPEATS = 3


def stall_threshold(setting: float | str, clock: ProgressClock) -> float | None:
    """Seconds without progress that make a stall; None when detection is off."""
    if isinstance(setting, (int, float)):
        return float(setting) if setting > 0 else None
    med = clock.median_interval()
    return max(AUTO_FLOOR_S, AUTO_FACTOR * med) if med is not None else AUTO_FLOOR_S


def stall_unknown(setting: float | str, clock: ProgressClock, now: float, launched_at: float | None = None) -> float | None:
    """Seconds a judge must still follow the job before it can say stalled or not, when the last
    progress came in a backlog without a time of its own (``clock.undated``); None when it can say now.

    ``last_at`` of an undated clock is the latest the progress can have been: silence past the
    threshold from there is a stall for sure; a job launched less than the threshold ago cannot be
    stalled yet.  Otherwise the answer comes from watching: new progress (dated as it is read), or
    none until the silence passes the threshold."""
    if not clock.undated or clock.last_at is None:
        return None
    limit = stall_threshold(setting, clock)
    if limit is None:
        return None
    silent = max(0.0, now - clock.last_at)
    if silent > limit or (launched_at and now - launched_at <= limit):
        return None
    return limit - silent


@dataclass(frozen=True)
class Stall:
    """A stall: how long without progress, the last progress line, the layer and its evidence."""

    silent_s: float
    threshold_s: float
    last_progress: str | None
    layer: Layer = Layer.APP
    evidence: str = ""

    def describe(self) -> str:
        last = f" (last: {self.last_progress[:100]})" if self.last_progress else ""
        why = f"; {self.evidence}" if self.evidence else ""
        return f"no progress for {fmt_secs(self.silent_s)}, over the {fmt_secs(self.threshold_s)} stall threshold{last}{why}"


#: the main thread's share of one core over which a stall is a loop spinning, not a wait (one
#: waiting on a lock, a queue or a socket uses none; a loaded machine gives a spinning one less than all)
BUSY_CPU = 0.3
#: the main thread's CPU time is measured over this long (``stat`` counts clock ticks of 10 ms)
CPU_SPAN_S = 0.2
#: clock ticks per second (``getconf CLK_TCK``: 100 on every Linux cockpit targets)
CLK_TCK = 100


#: what the reading of an fd's link says for an fd the process has closed
_CLOSED = "@closed"


async def sample_main(ctx: ActionContext, lead: ProcStat, log_path: str | None) -> tuple[float | None, str]:
    """The job's main thread's share of a core over :data:`CPU_SPAN_S`, from two ``stat`` lines read by
    one command (its own thread's, not the process's: a trainer's other threads, a data loader's or
    NCCL's, may spin while the loop waits); and, when the log is its captured output (``log_path``),
    what it says when its stdout and stderr both go elsewhere now (``os.dup2`` of /dev/null, a
    ``sys.stdout`` reopened): its progress is then written where cockpit does not read."""
    pid = int(lead.pid)
    stat = f"/proc/{pid}/task/{pid}/stat"
    # a closed fd has no link; one of another user's processes is not readable at all (said as nothing)
    fd = "; ".join(f"echo \"@fd $([ -r /proc/{pid}/fd ] && {{ readlink /proc/{pid}/fd/{n} || echo {_CLOSED}; }})\"" for n in (1, 2))
    cmd = f"cat {stat}; {fd}; sleep {CPU_SPAN_S}; cat {stat}"
    try:
        res = await ctx.run(cmd, timeout=5)
    except RemoteError:
        return None, ""
    lines = res.text.splitlines()
    fds = [ln[4:] for ln in lines if ln.startswith("@fd ")]
    stats = [p for p in (read_stat(ln) for ln in lines if ln.strip() and not ln.startswith("@fd ")) if p is not None]
    cpu = None
    if len(stats) == 2 and all(p.start_time == lead.start_time for p in stats):
        cpu = max(0, stats[1].utime + stats[1].stime - stats[0].utime - stats[0].stime) / CLK_TCK / CPU_SPAN_S
    away = ""
    # /dev/null or another file, never a pipe (``python train.py 2>&1 | tee LOG`` writes its log through one)
    # or closed (``os.close(1)``: the process lives, its output goes nowhere); the same start time says it is the same process
    if log_path and len(fds) == 2 and all(f == _CLOSED or output_kind(f) in ("null", "file") and not f.startswith(log_path) for f in fds) \
            and cpu is not None:
        out, err = ("closed" if f == _CLOSED else f for f in fds)
        away = (f"the main process no longer writes its log: its stdout is {out} and its stderr {err} now, so its "
                "progress goes where cockpit does not read")
    return cpu, away


#: a follower that read the main thread's CPU and outputs for a stall reads them again after this long
SAMPLE_EVERY_S = 30.0


async def sampled_main(ctx: ActionContext, reader: JobReader | None, lead: ProcStat | None,
                       stall: Stall | None) -> tuple[float | None, str]:
    """:func:`sample_main` for a stall placed at ``app`` or ``gpu`` (the evidence that may move it:
    ``(None, "")`` for any other, and for a scheduler's job), read again only every
    :data:`SAMPLE_EVERY_S` for the same process (a follower reads a stalled job every
    ``fate_interval``; verify's reader is the first fate's)."""
    if reader is None or lead is None or stall is None or stall.layer not in (Layer.APP, Layer.GPU) or reader.job.scheduler:
        return None, ""
    last, now = reader.sampled, time.monotonic()
    if last is not None and last[0] == (lead.pid, lead.start_time) and now - last[1] < SAMPLE_EVERY_S:
        return last[2], last[3]
    cpu, away = await sample_main(ctx, lead, reader.job.log_path if ctx.cfg.job.capture_output else None)
    reader.sampled = ((lead.pid, lead.start_time), now, cpu, away)
    return cpu, away


#: a main process in ``D`` at every look over this long is stuck, not doing I/O (verify: over consecutive readings)
STUCK_D_S = 2.0


async def stuck_in_d(ctx: ActionContext, lead: ProcStat) -> str | None:
    """The wait channel of a main process that stays in ``D`` at every look over :data:`STUCK_D_S`
    (one command; "" when the kernel does not say), None when it left ``D`` (a moment of I/O)."""
    pid, n = int(lead.pid), 8
    cmd = (f"for i in {' '.join(map(str, range(n)))}; do cat /proc/{pid}/stat; sleep {STUCK_D_S / n:g}; done; "
           f"echo \"@wchan $(cat /proc/{pid}/wchan 2>/dev/null)\"")
    try:
        res = await ctx.run(cmd, timeout=STUCK_D_S + 5)
    except RemoteError:
        return None
    lines = res.text.splitlines()
    stats = [p for p in (read_stat(ln) for ln in lines if ln.strip() and not ln.startswith("@wchan")) if p is not None]
    if len(stats) < n or any(p.start_time != lead.start_time or not p.state.startswith("D") for p in stats):
        return None
    return next((ln[7:].strip() for ln in lines if ln.startswith("@wchan ")), "").strip("0")


async def read_wchan(ctx: ActionContext, lead: ProcStat) -> str:
    """The kernel function the main process waits in ("" when the kernel does not say)."""
    try:
        res = await ctx.run(f"cat /proc/{int(lead.pid)}/wchan 2>/dev/null", timeout=5)
    except RemoteError:
        return ""
    return res.text.strip().strip("0")


def _busy(cpu: float | None) -> str:
    return f"the main thread is busy on the CPU ({cpu:.0%} of a core)" if cpu is not None and cpu >= BUSY_CPU else ""


def stall_layer(gpu_util: list[float] | None, xid: str | None, leader_state: str, wchan: str = "", *,
                cpu: float | None = None, away: str = "", gpu_fault: str = "", ended: str = "") -> tuple[Layer, str]:
    """Where a stall lives, with the evidence in words (see the module doc); ``cpu``, the main process's
    thread's share of a core, tells a loop spinning without progress from a wait; ``gpu_fault``, what
    nvidia-smi said of a lost GPU or a broken driver (:func:`read_gpus`); ``ended``, the job's last
    line when it says training reached its end (the process is held at exit, not stalled in training)."""
    if xid:
        return Layer.GPU, f"an Xid in the host kernel log since the stall began: {xid}"
    if leader_state[:1] in ("T", "t"):
        return Layer.PROCESS, f"the main process is {stopped_words(leader_state)}"
    if leader_state.startswith("D"):
        if any(k in wchan.lower() for k in ("nv", "uvm", "nvidia")):
            return Layer.GPU, f"the main process is stuck in D in the NVIDIA driver ({wchan})"
        return Layer.PROCESS, f"the main process is stuck in D (uninterruptible I/O{', ' + wchan if wchan else ''})"
    if gpu_fault:  # no utilisation to read: nvidia-smi itself says the GPU or its driver is gone
        return Layer.GPU, f"nvidia-smi fails: {gpu_fault}"
    if away:  # it may train on: what it writes is not in the log
        return Layer.APP, away
    if ended:
        return Layer.APP, (f"its last line says training ended ({ended[:120]}), and it has not exited: something holds it at "
                           "exit (a non-daemon thread, a child process never joined, an atexit handler)")
    busy = _busy(cpu)
    if gpu_util:
        if max(gpu_util) >= 90.0:
            return Layer.GPU, f"GPUs busy ({', '.join(f'{u:.0f}%' for u in gpu_util)}) with no progress: a device-side hang"
        if max(gpu_util) <= 1.0 and busy:
            return Layer.APP, f"every GPU idle (0%), {busy}: a loop that no longer reaches its progress line (a swallowed exception, a retry), not a wait"
        if max(gpu_util) <= 1.0:
            return Layer.APP, "every GPU idle (0%): a Python-side wait (a lock, a collective, a dataloader)"
    if busy and not gpu_util:
        return Layer.APP, f"{busy}: a loop that no longer reaches its progress line (a swallowed exception, a retry), not a wait"
    return Layer.APP, ""


def stopped_words(state: str) -> str:
    """``stopped by a signal (…) (state T): it resumes only with SIGCONT`` for a stopped process (SIGSTOP,
    a debugger: nothing in the code waits; only SIGCONT, or a detach, resumes it)."""
    what = "traced by a debugger" if state.startswith("t") else "stopped by a signal (SIGSTOP, SIGTSTP, Ctrl-Z)"
    return f"{what} (state {state}): it resumes only with SIGCONT"


def detect_stall(setting: float | str, clock: ProgressClock, now: float, leader_state: str = "", *,
                 gpu_util: list[float] | None = None, xid_since: Callable[[float], str | None] | None = None) -> Stall | None:
    """The stall of a live job whose last progress is older than the threshold, with its layer and
    evidence; None when it is not stalled (or detection is off).  Verify and the fate follower both
    judge with this one function."""
    limit = stall_threshold(setting, clock)
    silent = clock.silent_for(now)
    if limit is None or silent is None or silent <= limit:
        return stuck_count(setting, clock, now)
    xid = xid_since(clock.last_at or now) if xid_since is not None else None
    layer, why = stall_layer(gpu_util, xid, leader_state)
    return Stall(silent, limit, clock.last_line, layer, why)


def stuck_count(setting: float | str, clock: ProgressClock, now: float) -> Stall | None:
    """The stall of a job whose progress lines go on while the count in them stays put (``step 120``
    printed again and again: a loop retrying or skipping the same step), once that count had
    changed :data:`COUNT_CHANGES` times: no change for the stall threshold, nor for
    :data:`AUTO_FACTOR` times its own rhythm of changing (an epoch's count changes once an epoch)."""
    limit = stall_threshold(setting, clock)
    if (limit is None or clock.changed_at is None or clock.changes < COUNT_CHANGES or not clock.change_intervals
            or clock.repeats < COUNT_REPEATS):
        return None
    limit = max(limit, AUTO_FACTOR * statistics.median(clock.change_intervals))
    stuck = now - clock.changed_at
    if stuck <= limit:
        return None
    why = (f"its progress lines go on, but `{clock.count_text[:60]}` has not changed in the last {clock.repeats} of them: "
           "a loop retrying or skipping the same step")
    return Stall(stuck, limit, clock.last_line, Layer.APP, why)


#: nvidia-smi's failures that say the GPU or its driver is broken (not a query this driver lacks,
#: not a binary missing from the container): a job waiting on such a GPU hangs with it
_GPU_FAULTS = frozenset({"gpu-lost", "nvml-mismatch", "driver-not-loaded", "nvml-unknown", "no-devices"})


async def read_gpus(ctx: ActionContext) -> tuple[list[float] | None, str]:
    """Every GPU's utilisation, read now with one ``nvidia-smi`` where ``[gpu] where`` says (None when
    it cannot be read): the evidence a stall's layer needs when no observation holds it (verify, a
    headless follower, ``cockpit status``); and what nvidia-smi said when it failed because the GPU
    or its driver is broken (``a GPU is lost (fallen off the bus?): Unable to determine the device
    handle…``; "" else)."""
    if ctx.transport.runtime.scheduler is not None:  # the job's GPUs are on its nodes, not where cockpit runs commands
        return None, ""
    gpu = ctx.cfg.gpu
    cmd = f"{shlex.quote(gpu.nvidia_smi)} --query-gpu=utilization.gpu --format=csv,noheader,nounits"
    try:
        res = await (ctx.run_host if gpu.where == "host" else ctx.run)(cmd, timeout=5)
    except RemoteError:
        return None, ""
    if not res.ok:
        if res.timed_out or res.exit_code is None:
            return None, ""
        found = diagnose(res.exit_code, None, res.text, "query-gpu", None)
        return None, (found.summary if found.layer is Layer.GPU and found.kind in _GPU_FAULTS else "")
    vals = [w.strip() for w in res.stdout.decode("utf-8", "replace").splitlines()]
    return [float(v) for v in vals if v.replace(".", "", 1).isdigit()] or None, ""


async def judged_stall(ctx: ActionContext, stall: Stall | None, clock: ProgressClock, now: float, leader_state: str = "",
                       xid_since: Callable[[float], str | None] | None = None, *, gpu_util: list[float] | None = None,
                       cpu: float | None = None, away: str = "", ended: Callable[[], str | None] | None = None) -> Stall | None:
    """``stall`` with its layer judged on the GPUs' utilisation (``gpu_util`` observed, else read now)
    and the main thread's CPU share when nothing else placed it (an ``app`` stall without evidence:
    a device-side hang read without GPU values was told ``app``; a loop spinning on the CPU was told
    "a Python-side wait"; a job whose output no longer goes to the log, ``away``, was told hung; a job
    whose last line says training reached its end, ``ended()``, asked only once there is a stall, was
    told stalled in a Python-side wait)."""
    if stall is None:
        return stall
    said = "" if away or ended is None else ended() or ""
    if not away and not said and (stall.layer is not Layer.APP or (stall.evidence and not _busy(cpu))):
        return stall
    util, fault = (gpu_util, "") if gpu_util is not None else await read_gpus(ctx)
    layer, why = stall_layer(util, xid_since(clock.last_at or now) if xid_since is not None else None, leader_state, cpu=cpu, away=away,
                             gpu_fault=fault, ended=said)
    if not why:
        return stall
    return Stall(stall.silent_s, stall.threshold_s, stall.last_progress, layer, why)
