"""Launch and stop the training job without fooling ourselves (DESIGN §5).

Launch
------
The job must outlive the remote call that starts it, and the call must return at once.  With
``setsid`` (any container) cockpit runs, through the persistent session::

    cd WORKDIR && env K=V… setsid -f /bin/sh -c SUPERVISOR cockpit-job PIDFILE EXITFILE COMMAND \\
        </dev/null >>LOG 2>&1

where ``SUPERVISOR`` is ``cat /proc/$$/stat >"$1.stat"; echo $$ >"$1"; /bin/sh -c "$3"; echo "$? $$" >"$2"``.
The supervisor shell writes its own pid before it starts the command (so the pid is the job's,
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
live in :mod:`.stop` (zombies judged by persistence there); :func:`unsafe_ids` and
:func:`signal_group` stay here, shared with the strays.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shlex
import signal
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..layers import Evidence, Layer, Verdict
from ..procstat import ProcStat, read_stat
from .base import ActionContext, StageFailed, VerdictBuilder, check

if TYPE_CHECKING:  # pragma: no cover
    from ..slurm import SlurmScheduler

__all__ = ["signal_group", "unsafe_ids", "JobRecord", "launch", "stop", "read_stat", "ProcStat", "signal_name", "KNOWN_REAPERS", "ps_table"]

SUPERVISOR = 'cat /proc/$$/stat >"$1.stat" 2>/dev/null; echo $$ >"$1"; /bin/sh -c "$3"; echo "$? $$" >"$2"'

#: PID 1 names that reap orphans (a zombie under them is cleared as soon as its parent dies)
KNOWN_REAPERS = ("systemd", "init", "tini", "dumb-init", "s6-svscan", "runit", "runit-init", "docker-init", "catatonit", "openrc-init", "busybox")


@dataclass
class JobRecord:
    """What launch recorded about the job: enough to find it again, and only it."""

    attempt: int = 0
    pid: int | None = None
    pgid: int | None = None
    start_time: int | None = None  # clock ticks since boot, /proc/PID/stat field 22
    unit: str | None = None
    log_path: str = ""
    pid_file: str = ""
    exit_file: str = ""
    launcher: str = "setsid"
    launched_at: float = 0.0
    command: str = ""
    launch_id: str = ""
    workdir: str = ""
    #: a scheduler's job ("slurm") and its id there; empty for a job cockpit started itself
    scheduler: str = ""
    sched_id: str = ""
    #: the command exited while processes it started live on in the job's process group
    #: (:mod:`.survivors`): its exit status, and the survivor followed as the job since then
    launcher_exit: int | None = None
    launcher_log_size: int | None = None
    survivor_pid: int | None = None
    survivor_start: int | None = None
    survivor_cmd: str = ""
    survivor_since: float | None = None

    @property
    def started(self) -> bool:
        """Something was started: a pid, or a job the scheduler accepted."""
        return self.pid is not None or bool(self.scheduler and self.sched_id)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JobRecord:
        known = {k: d.get(k) for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)  # type: ignore[arg-type]


def scheduler_for(cfg: Any, job: JobRecord | None = None) -> SlurmScheduler | None:
    """The scheduler that launches and stops jobs for this target (``runtime = "slurm"``), or None:
    cockpit starts the job itself.  A recorded scheduler job is stopped through its scheduler."""
    kind = job.scheduler if job is not None and job.scheduler else (cfg.target.runtime if cfg.target.runtime == "slurm" else "")
    if not kind:
        return None
    from ..slurm import scheduler

    return scheduler(kind)


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def describe_exit(code: int) -> str:
    if code > 128:
        return f"killed by signal {code - 128} ({signal_name(code - 128)})"
    return f"exited with code {code}"


def new_launch_id() -> str:
    """A short id unique to one launch: the time and a random part."""
    return f"{int(time.time()):x}-{secrets.token_hex(3)}"


def _job_paths(ctx: ActionContext, attempt: int, launch_id: str) -> tuple[str, str, str]:
    log = ctx.cfg.log_path(attempt)
    return log, f"{log}.{launch_id}.pid", f"{log}.{launch_id}.exit"


async def _pid1(ctx: ActionContext) -> str:
    res = await ctx.run("cat /proc/1/comm", timeout=5)
    return res.text.strip()


LAUNCH_PLAN = [("prepare", Layer.CONTAINER), ("spawn", Layer.PROCESS)]


async def launch(ctx: ActionContext, attempt: int, verdict: Verdict | None = None) -> tuple[Verdict, JobRecord | None]:
    """Start ``[job] command``; returns at once with the job's record (or a failed verdict)."""
    cfg = ctx.cfg
    sched = scheduler_for(cfg)
    if sched is not None:
        return await sched.launch(ctx, attempt, verdict)
    vb = VerdictBuilder(ctx, "launch", LAUNCH_PLAN, verdict)
    launch_id = new_launch_id()
    log, pid_file, exit_file = _job_paths(ctx, attempt, launch_id)
    out = log if cfg.job.capture_output else log + ".console"
    rec = JobRecord(attempt=attempt, log_path=log, pid_file=pid_file, exit_file=exit_file, command=cfg.job.command,
                    launch_id=launch_id, workdir=cfg.job.workdir)
    q = shlex.quote
    async with vb.stage("prepare") as st:
        if not cfg.job.command.strip():
            raise StageFailed(Layer.CONFIG, "[job] command is empty", advice="set the training command in the config")
        launcher = cfg.job.launcher
        pid1 = await _pid1(ctx)
        if launcher == "auto":
            launcher = "systemd-run" if pid1 == "systemd" else "setsid"
        rec.launcher = launcher
        prep = (
            f"cd {q(cfg.job.workdir)} || {{ echo {q('workdir ' + cfg.job.workdir + ' is missing')} >&2; exit 90; }}; "
            f"mkdir -p {q(os.path.dirname(log))} || exit 91; "
            f"rm -f {q(pid_file)} {q(pid_file + '.stat')} {q(exit_file)}; "
            # a log of this name from an older journal must not pass for this attempt's output
            f"for f in {q(log)} {q(out)}; do [ -e \"$f\" ] && mv -f \"$f\" \"$f.old-$(date +%s)\"; done; "
            f"command -v {'systemd-run' if launcher == 'systemd-run' else 'setsid'} >/dev/null || {{ echo '{launcher} not found' >&2; exit 127; }}"
        )
        res = await ctx.run(prep, timeout=15)
        if res.exit_code == 90:
            raise StageFailed(Layer.CONTAINER, f"workdir {cfg.job.workdir} does not exist inside the target", evidence=res.evidence(), advice="create it or fix [job] workdir")
        check(res, Layer.CONTAINER, "preparing the launch")
        st.ok(f"launcher {launcher} (PID 1 is {pid1 or '?'}); log {log}")
    if vb.failed:
        return vb.finish(), None

    async with vb.stage("spawn") as st:
        env = " ".join(q(f"{k}={v}") for k, v in cfg.job.env.items())
        envp = f"env {env} " if env else ""
        if rec.launcher == "systemd-run":
            rec.unit = f"cockpit-{_unit_safe(cfg.display_name)}-{attempt}-{int(time.time())}"
            envflags = " ".join(f"--setenv={q(f'{k}={v}')}" for k, v in cfg.job.env.items())
            inner = f"exec </dev/null >>{q(out)} 2>&1; " + SUPERVISOR
            cmd = (f"systemd-run --unit={q(rec.unit)} --collect --quiet -p WorkingDirectory={q(cfg.job.workdir)} "
                   f"-p UMask={q(cfg.job.umask.rjust(4, '0'))} {envflags} "
                   f"/bin/sh -c {q(inner)} cockpit-job {q(pid_file)} {q(exit_file)} {q(cfg.job.command)}")
        else:
            cmd = (f"cd {q(cfg.job.workdir)} && umask {q(cfg.job.umask)} && {envp}setsid -f /bin/sh -c {q(SUPERVISOR)} cockpit-job "
                   f"{q(pid_file)} {q(exit_file)} {q(cfg.job.command)} </dev/null >>{q(out)} 2>&1")
        rec.launched_at = time.time()
        res = await ctx.run(cmd, timeout=15)
        try:
            check(res, Layer.PROCESS, f"starting the job with {rec.launcher}")
        except StageFailed as failed:
            if failed.evidence is not None:
                failed.evidence = redact_evidence(failed.evidence, cfg.job.env)
            raise
        # the supervisor writes its pid as its first act; give it a moment to exist
        deadline = time.monotonic() + 5.0
        stat: ProcStat | None = None
        while time.monotonic() < deadline:
            # the supervisor's own record of its stat line when it is already gone (a launcher that exits at once)
            r = await ctx.run(f"p=$(cat {q(pid_file)} 2>/dev/null) && echo \"$p\" && {{ cat /proc/$p/stat 2>/dev/null || cat {q(pid_file + '.stat')}; }}",
                              timeout=5)
            lines = r.text.splitlines()
            if lines and lines[0].strip().isdigit():
                rec.pid = int(lines[0])
                stat = read_stat(lines[1]) if len(lines) > 1 else None
                break
            await asyncio.sleep(0.05)
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


def redact_evidence(ev: Evidence, env: dict[str, str]) -> Evidence:
    """The launch command as evidence, with the values of secret-named ``[job.env]`` keys
    (:func:`~cockpit.core.redact.secret_env_name`: HF_TOKEN, DB_PASSWORD, WANDB_API_KEY…) and
    well-known secret shapes replaced by ``***``: they must not reach the journal, the screen or an
    export.  Other values (paths, flags) stay: they are evidence."""
    from ..redact import Redactor

    return Redactor(env).evidence(ev)


def _unit_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40] or "job"


async def ps_table(ctx: ActionContext) -> list[tuple[int, int, int, str, str]]:
    """(pid, ppid, pgid, stat, comm) of every process in the target, from /proc (no procps needed)."""
    res = await ctx.run("cat /proc/[0-9]*/stat 2>/dev/null", timeout=10)
    out = []
    for line in res.text.splitlines():
        st = read_stat(line)
        if st is not None:
            out.append((st.pid, st.ppid, st.pgid, st.state, st.comm))
    return out


async def pid1_reaps(ctx: ActionContext) -> tuple[str, bool]:
    name = await _pid1(ctx)
    return name, name in KNOWN_REAPERS


async def stop(ctx: ActionContext, job: JobRecord | None, verdict: Verdict | None = None) -> Verdict:
    """Stop the recorded job: TERM → wait → KILL → wait, then prove nothing of it is left
    (:func:`.stop.stop`, where the stages live; imported late because that module builds on this one)."""
    from .stop import stop as stop_job

    return await stop_job(ctx, job, verdict)


def unsafe_ids(pid: int | None, pgid: int | None) -> str | None:
    """Why a process (``pid``) and its group (``pgid``) must not be signalled, or None when they may.

    Inside a PID namespace, PID 1 is the container's init (signalling it stops the container) and a
    group of 0 is one that lies outside the namespace (``/proc`` shows 0): ``kill -- -0`` would reach
    the caller's own group and ``kill -- -1`` every process.  A record or a stray that names such an
    id says nothing about the job, so it is refused, never guessed around (``pgid or pid``)."""
    if pid is None or pid <= 0:
        return f"no usable pid ({pid})"
    if pid == 1:
        return "pid 1 is the container's init (PID 1): signalling it would stop the container, not the job"
    if pgid is None:
        return "no process group recorded"
    if pgid == 0:
        return "its process group (0) lies outside this PID namespace: it cannot be named from inside"
    if pgid == 1:
        return "its process group is PID 1's (1): kill -- -1 would reach every process"
    if pgid < 0:
        return f"process group {pgid} is not a process group"
    return None


def signal_group(sig: str, job: JobRecord, *, start_time: int | None = None) -> str:
    """Signal the job's process group, every other group of its session (a process that made its
    own group, :mod:`.survivors`), and its pid, in case it left the group.

    ``kill -s SIG -- -PGID`` is the POSIX form; dash rejects ``kill -SIG -- -PGID``.  Never a
    pattern: the process group is the one the job's own supervisor created with setsid.  With
    ``start_time`` the pid is signalled only while ``/proc/PID/stat`` field 22 still equals it, checked
    in the same shell command: a pid reused since the last look is never signalled.  Raises
    ValueError for ids :func:`unsafe_ids` refuses (callers check first: this is the last guard).
    """
    g, p = int(job.pgid or job.pid or 0), int(job.pid or 0)
    if g <= 1 or p <= 1:
        raise ValueError(f"refusing to signal process group {g} / pid {p}: it would reach processes that are not the job")
    one = f"kill -s {sig} {p} 2>/dev/null"
    if start_time is not None:
        # fields after the last ')' start at field 3, so field 22 is the 20th of them
        one = (f"s=$(cat /proc/{p}/stat 2>/dev/null) && s=${{s##*) }} && set -- $s && "
               f"[ \"${{20}}\" = {int(start_time)} ] && {one}")
    # the session the supervisor leads has the group's id; its other groups (fields 5 and 6 of stat)
    sess = (f"for f in /proc/[0-9]*/stat; do read -r l 2>/dev/null < \"$f\" || continue; set -- ${{l##*) }}; "
            f"[ \"$4\" = {g} ] && [ \"$3\" != {g} ] && [ \"$3\" -gt 1 ] 2>/dev/null && kill -s {sig} -- -\"$3\" 2>/dev/null; done")
    return f"kill -s {sig} -- -{g} 2>/dev/null || kill -{sig} -{g} 2>/dev/null; {sess}; {one}; true"
