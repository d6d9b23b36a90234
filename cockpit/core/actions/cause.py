"""Why a job is not healthy: one explanation, with its layer, used by verify and by the fate follower.

Most specific evidence first:

0. a full filesystem where the job writes (:mod:`.diskcheck`: one ``df`` in the target) →
   ``container``, ahead of the code's traceback (a GPU error keeps the lead);
1. an error signature in its log (a Python traceback in any thread → ``app``; CUDA OOM → ``gpu``…);
2. exit 126/127: the command was not found inside the target → ``container`` (unless the job's own
   code ran and no shell said "not found": a trainer's own ``sys.exit(127)`` is its exit code);
3. killed by SIGKILL with no traceback, and the host kernel log has an OOM kill for it →
   ``container`` ("killed by the OOM killer");
4. gone without an exit status while the target's PID 1 is younger than the job → ``host`` (the
   container was restarted under it); without that evidence → ``process`` (vanished);
5. otherwise the exit code or signal → ``process``.

An ``app`` or ``process`` death with a GPU lost, or a GPU Xid in the host kernel log, since the
launch (:mod:`.gpufault`) is told ``gpu``: what the code or the signal said comes first, the GPU's
fault after it.

Every cause also says *when*: seconds after the launch, and the last progress line before it.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
from dataclasses import asdict
from typing import Any

from ..layers import Layer
from ..outcome import code_ran, handled_last, last_words
from ..probes import kmsg
from ..remote.base import RemoteError
from .base import ActionContext
from .causebase import Cause, _when, error_cause, fmt_secs, progress_lost, survived, trained_past
from .diskcheck import DISK_ADVICE, check_disks, disk_detail
from .gpufault import gpu_faults, gpu_note
from .jobrecord import JobRecord, describe_exit
from .jobstate import JobState, LogScan
from .left_out import left_out_cause
from .survivors import leftovers_note, pipeline_last
from .torchrun import worker_signal
from .wrappers import time_limit_end

__all__ = ["Cause", "death_cause", "error_cause", "fmt_secs"]

log = logging.getLogger(__name__)
#: the name ``import torch`` gives a Python job's main thread, and so its process's ``comm``
TORCH_MAIN_THREAD = "pt_main_thread"
OOM_ADVICE = "the container ran out of memory: raise its memory limit or lower the batch size"


#: a shell's own line for a command it could not run (dash ``sh: 1: foo: not found``, bash ``bash: line
#: 1: foo: command not found``, ``exec: foo: not found``, ``./x: Permission denied``)
_SHELL_NOT_FOUND = re.compile(r"^\S*sh: (?:line )?\d+: .*: (?:(?:command )?not found|Permission denied|No such file or directory)\s*$")


def not_found(scan: LogScan) -> bool:
    """Exit 126/127 means the shell could not run a command: when the job's code never ran, or a
    shell says so in the log's tail.  A trainer that logged steps and then exited 127 itself did run."""
    ran = code_ran(scan)
    return ran is None or not ran.ran or any(_SHELL_NOT_FOUND.match(line.strip()) for line in scan.tail_lines or [])


async def _oom_evidence(ctx: ActionContext, job: JobRecord, *also: str) -> str | None:
    """An OOM kill of the job in the host kernel log (pct only: dmesg is not readable inside)."""
    if not ctx.transport.runtime.in_container:  # the host's kernel log is read from the host of a container
        return None
    try:
        res = await ctx.run_host(kmsg.kmsg_command(), timeout=10)
    except RemoteError as e:  # evidence gathering must never hide the verdict itself
        log.info("no kernel log for the OOM check: %s", e)
        return None
    report = kmsg.parse_kmsg(res.stdout)
    for name in dict.fromkeys([*victim_names(job, ctx.cfg.job.command), *also]):
        hit = kmsg.oom_killed(report.findings, name, job.launched_at - 5, container=ctx.cfg.target.container)
        if hit is not None:
            return hit.summary
    return None


def victim_names(job: JobRecord, command: str) -> list[str]:
    """The names the kernel may give the job's process in an OOM report (its ``comm``): the main
    process's as verify saw it, the command's first word, and for a Python job ``pt_main_thread``,
    the name ``import torch`` gives the main thread (a torch trainer's OOM kill never says python3)."""
    try:
        words = shlex.split(job.command or command)
    except ValueError:
        words = (job.command or command).split()
    names = [n for n in (job.main_comm, os.path.basename(words[0]) if words else "python3") if n]
    if any(n.startswith("python") for n in names):
        names.append(TORCH_MAIN_THREAD)
    return list(dict.fromkeys(names))


async def death_cause(ctx: ActionContext, job: JobRecord, st: JobState, scan: LogScan) -> Cause:
    """The most specific explanation of why the job is gone (see the module doc), naming the
    processes it started that were still exiting (:func:`~.survivors.leftovers_note`)."""
    cause = await _death_cause(ctx, job, st, scan)
    cause.detail += leftovers_note(st)
    if cause.layer in (Layer.APP, Layer.PROCESS) and cause.state in ("died", "vanished"):
        # a GPU lost (or an Xid) in its window: what the code or the signal says is most likely its echo
        faults = await gpu_faults(ctx, job.launched_at)
        if faults:
            cause.data = {**cause.data, "said_layer": cause.layer.value, "gpu_faults": [f.to_dict() for f in faults]}
            cause.layer, cause.advice = Layer.GPU, faults[0].advice
            cause.detail += f"; {gpu_note(faults, running=False)}"
    return cause


async def _death_cause(ctx: ActionContext, job: JobRecord, st: JobState, scan: LogScan) -> Cause:
    special = st.scheduler_cause(job, scan)  # a scheduler's own end states (Slurm: NODE_FAIL → host…)
    if special is not None:
        return special  # type: ignore[no-any-return]
    code = st.exit_code
    after, when = _when(job, st, scan)
    data: dict[str, Any] = {"exit_code": code, "first_error": scan.error(), "final_error": scan.final_error(),
                            "last_progress": scan.last_progress, "after_s": after, **st.scheduler_evidence()}
    lead = st.leader
    if code is None and lead is not None and lead.state.startswith("Z"):
        how = (f"its main process {lead.pid} exited but {lead.threads} thread(s) are stuck in the kernel (Zl)"
               if lead.threads > 1 else f"its main process {lead.pid} is a zombie ({lead.state})")
        state = "died"
    elif code is None:
        how, state = "gone without an exit status", "vanished"
    else:
        how, state = describe_exit(code), "died"
        if code == 0 and (last := pipeline_last(job.command or ctx.cfg.job.command)):
            how = f"its pipeline exited 0, the status of its last command ({last}): the trainer's own is not observed (set -o pipefail)"
    err = left_out_cause(ctx.cfg, error_cause(scan, death=True))  # a module the deploy left out is the config's
    limit = time_limit_end(job.command or ctx.cfg.job.command, code, after)  # the command's `timeout` ended it
    if limit is not None:
        how, advice = limit
        if err is not None and err.layer in (Layer.APP, Layer.GPU):  # the code's own error before (not the shell's "Killed")
            how += f"; the log's error before it: {err.detail}"
        return Cause(Layer.PROCESS, how, advice, {**data, "time_limit": True}, state, after, when)
    full = await check_disks(ctx, job.workdir or ctx.cfg.job.workdir, job.log_path)  # one round trip, on failure only
    if full and (err is None or err.layer is not Layer.GPU):  # a full disk before the code's traceback
        data["disk_full"] = [asdict(u) for u in full]
        return Cause(Layer.CONTAINER, disk_detail(full, how, err.detail if err else ""), DISK_ADVICE, data, state, after, when)
    if err is not None and err.layer in (Layer.APP, Layer.GPU):
        return Cause(err.layer, f"{how}: {err.detail}", err.advice, {**data, **err.data}, state, after, when)
    if code in (126, 127) and not_found(scan):
        return Cause(Layer.CONTAINER, f"{how}: the command or its interpreter was not found inside the target",
                     "use an absolute path in [job] command (pct exec's PATH is minimal)", data, state, after, when)
    if code is not None and code - 128 == 9:
        oom = await _oom_evidence(ctx, job)
        if oom:
            data["oom"] = oom
            return Cause(Layer.CONTAINER, f"killed by the OOM killer: {oom}", OOM_ADVICE, data, state, after, when)
    if err is None and (worker := worker_signal(scan.tail_lines)) is not None:  # torchrun's report: a worker killed
        data["worker_signal"] = worker.signal
        if worker.signal == 9 and (oom := await _oom_evidence(ctx, job, "python3", TORCH_MAIN_THREAD)):
            data["oom"] = oom
            return Cause(Layer.CONTAINER, f"{worker.describe()}: killed by the OOM killer: {oom}", OOM_ADVICE, data, state, after, when)
        advice = "a SIGKILL without a traceback is often the OOM killer: check the host's kernel log" if worker.signal == 9 else ""
        return Cause(Layer.PROCESS, f"{how}: {worker.describe()}", advice, data, state, after, when)
    if err is not None:
        return Cause(err.layer, f"{how}: {err.detail}", err.advice, {**data, **err.data}, state, after, when)
    if state == "vanished" and st.rebooted_since:
        return Cause(Layer.HOST, "the target was restarted under the job: PID 1 is younger than the job",
                     "who rebooted the container? check the host (pct status, its journal)", data, state, after, when)
    if state == "vanished":
        return Cause(Layer.PROCESS, "the job and its supervisor are gone without an exit status",
                     "killed from outside together with its supervisor (kill -9 of the group, a reboot)", data, state, after, when)
    advice = "read the log tail; a SIGKILL without a traceback is often the OOM killer" if code == 137 else ""
    handled = handled_last(scan)  # logged below ERROR, then no progress: what it died of, most likely
    gone = ", its log was deleted while it ran: its last lines could not be read"  # a traceback may have gone with it
    lost = ", with no traceback in the log now: a traceback may have gone with the lines it lost" if progress_lost(job, scan) else ""
    past = survived(scan)
    how += (f", right after a traceback it logged as a warning: {handled}" if handled else gone if st.log_gone
            else lost or (f", {trained_past(past)}" if past else ", with no traceback in the log"))
    said = last_words(scan)
    how += f"; {'the last line read' if st.log_gone else 'its last line'}: {said}" if said and not handled else ""
    return Cause(Layer.PROCESS, how, advice, data, state, after, when)
