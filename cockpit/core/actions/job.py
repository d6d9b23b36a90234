"""Launch and stop the training job without fooling ourselves.

Launch
------
The job must outlive the remote call that starts it, and the call must return at once.  With
``setsid`` (any container) cockpit runs, through the persistent session::

    cd WORKDIR && env K=V… setsid -f /bin/sh -c SUPERVISOR cockpit-job PIDFILE EXITFILE COMMAND \\
        </dev/null >>LOG 2>&1

where ``SUPERVISOR`` is ``read -r s </proc/$$/stat && printf "%s\\n" "$s" >"$1.stat"; echo $$ >"$1"; /bin/sh -c "$3";
echo "$? $$" >"$2"`` (built-ins until the command: the pid file is there a moment after the spawn).
The supervisor shell writes its own pid before it starts the command, and starts nothing when it cannot
(a full or read-only filesystem: a job cockpit could not follow must not run; so the pid is the job's,
never a guess from ``ps | grep``), and before that its own ``/proc`` stat line (``PIDFILE.stat``:
its start time proves the record's identity even when the command exits at once, as a launcher
that leaves its trainer running does, see :mod:`.survivors`), waits for it, and writes its exit status (``128+N`` for signal N) followed by
its own pid, so a status can always be told apart from another launch's.  The pid and exit files
carry a **launch id** in their names (``train-3.log.<launch id>.pid``): a copy of the job left
running by another journal, another cockpit or a manual launch can never write this attempt's
result.  It leads a new
session and process group, so stopping the group stops everything the job started.  All three
standard streams are redirected: no background child can hold the channel open and hang the call.
With ``systemd-run`` (PID 1 is systemd) the same supervisor runs as a transient unit.

Stop
----
By what launch recorded, never by pattern (``pkill -f python3`` matches its own parent shell): the
pid's start time (``/proc/PID/stat`` field 22) is checked first, so a reused pid is never killed;
then TERM to the process group, wait, KILL, wait; then whatever is left is reported.  The stages
live in :mod:`.stop` (zombies judged by persistence there); :func:`unsafe_ids`,
:func:`signal_group` and the :class:`JobRecord` live in :mod:`.jobrecord`, shared with the strays and
the schedulers.  A runtime with a scheduler (Slurm) launches and stops its jobs itself
(``ctx.transport.runtime.scheduler``).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time

from ..config import Config
from ..layers import Evidence, Layer, Verdict
from ..procstat import ProcStat, read_stat
from .base import ActionContext, StageFailed, VerdictBuilder, check
from .compiletrace import prepare_trace, trace_command, trace_plan
from .diskcheck import FULL_PCT
from .jobrecord import (
    KNOWN_REAPERS,
    JobRecord,
    describe_exit,
    new_launch_id,
    redact_evidence,
    signal_group,
    signal_name,
    unit_safe,
    unsafe_ids,
)
from .proctable import pid1_reaps, ps_table
from .stop import stop

__all__ = ["signal_group", "unsafe_ids", "JobRecord", "launch", "stop", "read_stat", "ProcStat", "signal_name", "KNOWN_REAPERS", "ps_table",
           "pid1_reaps", "describe_exit", "redact_evidence", "new_launch_id"]

SUPERVISOR = ('{ read -r s </proc/$$/stat && printf "%s\\n" "$s" >"$1.stat"; } 2>/dev/null; echo $$ >"$1" || exit 97; '
              '/bin/sh -c "$3"; echo "$? $$" >"$2"')



#: set for the job unless ``[job.env]`` sets it: into a file, Python's stdout is block-buffered, so a
#: trainer's ``print`` reached the log kilobytes late, in bursts (read as no progress, or a stall)
DEFAULT_ENV = {"PYTHONUNBUFFERED": "1"}


def job_env(cfg: Config, attempt: int) -> dict[str, str]:
    """The job's environment on top of the target's: :data:`DEFAULT_ENV`, ``[job.env]``, ``TORCH_TRACE``."""
    return {**DEFAULT_ENV, **cfg.job.env, **trace_plan(cfg, attempt).env}  # TORCH_TRACE only where the job sets none itself


def _job_paths(ctx: ActionContext, attempt: int, launch_id: str) -> tuple[str, str, str]:
    log = ctx.cfg.log_path(attempt)
    return log, f"{log}.{launch_id}.pid", f"{log}.{launch_id}.exit"


#: prepare's exit status when the log's directory takes no write (read-only, full)
UNWRITABLE = 92


def writable_test(log: str) -> str:
    """Shell text for prepare: a short write beside the log (the pid file, the exit file and the job's
    output all go there); on failure the shell's error and ``df`` of that directory, exit :data:`UNWRITABLE`."""
    q = shlex.quote
    probe, d = q(f"{log}.cockpit-write-test"), q(os.path.dirname(log) or ".")
    return (f"w=$(printf 'cockpit\\n' 2>&1 >{probe}) || {{ rm -f {probe} 2>/dev/null; echo \"cockpit-unwritable $w\"; "
            f"df -P -- {d} 2>/dev/null | tail -n 1 | sed 's/^/cockpit-df /'; exit {UNWRITABLE}; }}; rm -f {probe}; ")


def unwritable_detail(log: str, out: str) -> str:
    """``cannot write beside the job's log …: Read-only file system`` (or the full filesystem's figures)."""
    said = ""
    df: list[str] = []
    for line in out.splitlines():
        if line.startswith("cockpit-unwritable "):
            said = line[len("cockpit-unwritable "):].strip()
        elif line.startswith("cockpit-df "):
            df = line[len("cockpit-df "):].split()
    why = said.split(": ")[-1] if said else "the write failed"
    if len(df) >= 6 and df[4].rstrip("%").isdigit() and (int(df[4].rstrip("%")) >= FULL_PCT or df[3] == "0"):
        why = f"{df[5]} is full ({df[4]} used, {df[3]} KiB free)"
    return f"cannot write beside the job's log {log}: {why}; the job was not started"


LAUNCH_PLAN = [("prepare", Layer.CONTAINER), ("spawn", Layer.PROCESS)]
#: built-in tests of the pid file before the first ``sleep`` (2-3 us each: up to ~10 ms; the lab's
#: supervisor writes its pid after ~1,700 of them)
SPIN = 4000
_PID_MARK = "cockpit-spawned"


async def launch(ctx: ActionContext, attempt: int, verdict: Verdict | None = None) -> tuple[Verdict, JobRecord | None]:
    """Start ``[job] command``; returns at once with the job's record (or a failed verdict)."""
    cfg = ctx.cfg
    sched = ctx.transport.runtime.scheduler  # a runtime whose scheduler launches the job (Slurm)
    if sched is not None:
        return await sched.launch(ctx, attempt, verdict)
    vb = VerdictBuilder(ctx, "launch", LAUNCH_PLAN, verdict)
    launch_id = new_launch_id()
    log, pid_file, exit_file = _job_paths(ctx, attempt, launch_id)
    out = log if cfg.job.capture_output else log + ".console"
    rec = JobRecord(attempt=attempt, log_path=log, pid_file=pid_file, exit_file=exit_file, command=cfg.job.command,
                    launch_id=launch_id, workdir=cfg.job.workdir, target=cfg.display_name)
    q = shlex.quote
    async with vb.stage("prepare") as st:
        if not cfg.job.command.strip():
            raise StageFailed(Layer.CONFIG, "[job] command is empty", advice="set the training command in the config")
        launcher = cfg.job.launcher
        # one round trip: PID 1's name (the auto launcher's choice) first, then the preparation
        choose = ("l=setsid; [ \"$p1\" = systemd ] && l=systemd-run; " if launcher == "auto"
                  else f"l={'systemd-run' if launcher == 'systemd-run' else 'setsid'}; ")
        prep = (
            "{ read -r p1 </proc/1/comm; } 2>/dev/null || p1=; printf 'cockpit-pid1 %s\\n' \"$p1\"; "
            f"cd {q(cfg.job.workdir)} || {{ echo {q('workdir ' + cfg.job.workdir + ' is missing')} >&2; exit 90; }}; "
            f"[ -d {q(os.path.dirname(log))} ] || mkdir -p {q(os.path.dirname(log))} || exit 91; "
            + writable_test(log) +
            f"for f in {q(pid_file)} {q(pid_file + '.stat')} {q(exit_file)}; do {{ [ -e \"$f\" ] || [ -L \"$f\" ]; }} && rm -f \"$f\"; done; "
            # a log of this name from an older journal must not pass for this attempt's output
            f"for f in {q(log)} {q(out)}; do [ -e \"$f\" ] && mv -f \"$f\" \"$f.old-$(date +%s)\"; done; "
            + choose + "command -v \"$l\" >/dev/null || { echo \"$l not found\" >&2; exit 127; }"
        )
        plan = trace_plan(cfg, attempt)
        rider = trace_command(plan)
        if rider is not None:
            ctx.ride(rider)  # the trace directory's preparation rides in the same round trip (its answer kept for it)
        res = (await ctx.run_many([prep], timeout=15))[0]
        pid1_name = next((ln[len("cockpit-pid1 "):].strip() for ln in res.text.splitlines() if ln.startswith("cockpit-pid1 ")), "")
        if launcher == "auto":
            launcher = "systemd-run" if pid1_name == "systemd" else "setsid"
        rec.launcher = launcher
        if res.exit_code == 90:
            raise StageFailed(Layer.CONTAINER, f"workdir {cfg.job.workdir} does not exist inside the target", evidence=res.evidence(), advice="create it or fix [job] workdir")
        if res.exit_code == UNWRITABLE:
            raise StageFailed(Layer.CONTAINER, unwritable_detail(log, res.text), evidence=res.evidence(), data={"log_unwritable": True},
                              advice="the job was not started: free space there, remount it read-write, or set [job] log elsewhere")
        check(res, Layer.CONTAINER, "preparing the launch")
        rec.trace_dir = plan.directory
        traced = await prepare_trace(ctx, plan, attempt)
        st.ok(f"launcher {launcher} (PID 1 is {pid1_name or '?'}); log {log}" + (f"; {traced}" if traced else ""))
    if vb.failed:
        return vb.finish(), None

    async with vb.stage("spawn") as st:
        env_vars = job_env(cfg, attempt)
        env = " ".join(q(f"{k}={v}") for k, v in env_vars.items())
        envp = f"env {env} " if env else ""
        if rec.launcher == "systemd-run":
            rec.unit = f"cockpit-{unit_safe(cfg.display_name)}-{attempt}-{int(time.time())}"
            envflags = " ".join(f"--setenv={q(f'{k}={v}')}" for k, v in env_vars.items())
            inner = f"exec </dev/null >>{q(out)} 2>&1; " + SUPERVISOR
            cmd = (f"systemd-run --unit={q(rec.unit)} --collect --quiet -p WorkingDirectory={q(cfg.job.workdir)} "
                   f"-p UMask={q(cfg.job.umask.rjust(4, '0'))} {envflags} "
                   f"/bin/sh -c {q(inner)} cockpit-job {q(pid_file)} {q(exit_file)} {q(cfg.job.command)}")
        else:
            cmd = (f"cd {q(cfg.job.workdir)} && umask {q(cfg.job.umask)} && {envp}setsid -f /bin/sh -c {q(SUPERVISOR)} cockpit-job "
                   f"{q(pid_file)} {q(exit_file)} {q(cfg.job.command)} </dev/null >>{q(out)} 2>&1")
        # the supervisor's own record of its stat line when it is already gone (a launcher that exits at once)
        read_pid = f"p=$(cat {q(pid_file)} 2>/dev/null) && echo \"$p\" && {{ cat /proc/$p/stat 2>/dev/null || cat {q(pid_file + '.stat')}; }}"
        rec.launched_at = time.time()
        # the first look for the pid file rides in the same command, after up to 0.2 s of waiting
        # for it there (its output follows a marker; the launcher's own exit status is the command's):
        # first a short spin of the built-in test (the supervisor writes it within a millisecond or
        # two of the fork: a `sleep` would cost its own fork and 10 ms), then 10 ms sleeps
        wait_pid = (f"i=0; while [ ! -s {q(pid_file)} ] && [ $i -lt {SPIN} ]; do i=$((i+1)); done; "
                    f"i=0; while [ ! -s {q(pid_file)} ] && [ $i -lt 20 ]; do sleep 0.01 2>/dev/null || break; i=$((i+1)); done")
        res = await ctx.run(f"{cmd}; rc=$?; [ $rc = 0 ] || exit $rc; {wait_pid}; echo {_PID_MARK}; {read_pid}; exit 0", timeout=15)
        try:
            check(res, Layer.PROCESS, f"starting the job with {rec.launcher}")
        except StageFailed as failed:
            if failed.evidence is not None:
                failed.evidence = redact_evidence(failed.evidence, cfg.job.env)
            raise
        first = res.text.split(_PID_MARK + "\n", 1)[1] if _PID_MARK + "\n" in res.text else ""
        # the supervisor writes its pid as its first act; give it a moment to exist
        deadline = time.monotonic() + 5.0
        stat: ProcStat | None = None
        tries = 0
        while time.monotonic() < deadline:
            if first:
                text, first = first, ""
            else:
                if tries:
                    await asyncio.sleep(0.05)
                tries += 1
                text = (await ctx.run(read_pid, timeout=5)).text
            lines = text.splitlines()
            if lines and lines[0].strip().isdigit():
                rec.pid = int(lines[0])
                stat = read_stat(lines[1]) if len(lines) > 1 else None
                break
        if rec.pid is None:
            raise StageFailed(Layer.PROCESS, f"the job never wrote its pid file {pid_file} within 5s: it never spawned",
                              evidence=res.evidence(), advice="read the log; is /bin/sh usable inside the target?")
        if stat is not None:
            rec.pgid, rec.start_time = stat.pgid, stat.start_time
        else:
            # it already exited: the exit file tells how; verify reports it
            rec.pgid = rec.pid
        detail = f"pid {rec.pid}, process group {rec.pgid}" + (f", unit {rec.unit}" if rec.unit else "")
        st.ok(detail, redact_evidence(Evidence(command=cmd, exit_code=res.exit_code, output=""), cfg.job.env), job=rec.to_dict())
    ctx.job = rec
    return vb.finish(), rec
