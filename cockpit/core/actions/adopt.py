"""Adopt a job cockpit did not start: read it once, record it, read it again and again as cockpit's own.

A training job started by hand (``nohup python train.py > train.log &`` in a tmux, a ``pct exec``)
is a *stray* to cockpit: shown, never followed.  Adopting its pid makes it the target's job:

* :func:`read_process` reads ``/proc/PID/{stat,cmdline,cwd,environ,fd/1,fd/2}``, ``/proc/uptime``
  and PID 1's stat line in **one** remote command (the pid is an integer, every path is
  shell-quoted); a pid that is gone, a zombie or a dead process is refused in the ``process``
  layer, naming what was found;
* :func:`adopted_record` makes the :class:`~.jobrecord.JobRecord`: the pid, its start time
  (stat field 22: every later signal is guarded by it), argv, cwd, the log when fd 1 (else fd 2) is
  a file, ``adopted=True``.  Its process group is recorded only when the job leads that group
  (``setsid``, a shell with job control) and the group is not PID 1's: a job that shares the group
  of the shell that started it, or of the container's init, is recorded with its own pid as the
  group, so stop signals the job (by pid and start time) and nothing else of the group;
* :class:`AdoptedReader` reads it as :class:`~.jobstate.JobReader` reads a launched job, with no
  supervisor: the job's own main process is the leader, its children its members.  Its exit
  status is never seen (cockpit is not its parent): an adopted job that is gone has ``died`` with
  what its log says, or with "exit status not observable".
"""

from __future__ import annotations

import secrets
import shlex
import time
from dataclasses import dataclass, field, fields
from typing import Any

from ..layers import Layer
from ..outcome import said_ended
from ..procstat import ProcStat, output_kind, read_stat
from ..redact import secret_env_name
from .base import ActionContext, StageFailed
from .causebase import Cause, error_cause
from .jobrecord import JobRecord
from .jobstate import READ_MAX, JobReader, JobState, LogScan, echo_time, parse_state, reader_for

__all__ = ["Adoptee", "read_process", "adopted_record", "AdoptedReader", "AdoptedState", "output_of", "CLK_TCK", "job_reader"]

CLK_TCK = 100
#: environment variables worth keeping with the adoption (where the job's GPUs and caches are)
_ENV_PREFIXES = ("CUDA_", "NCCL_", "TORCH", "PYTORCH_", "OMP_", "HF_", "WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_")
_PARTS = ("uptime", "init", "stat", "cwd", "fd1", "fd2", "cmdline", "environ")


def output_of(link: str) -> str:
    """Where an fd points: ``file``, ``pipe``, ``tty``, ``socket``, ``null``, ``deleted`` or ``unknown``
    (:func:`cockpit.core.procstat.output_kind`, as discovery names it)."""
    return output_kind(link)


@dataclass
class Adoptee:
    """One reading of the process to adopt."""

    pid: int
    stat: ProcStat
    argv: list[str]
    cwd: str
    fd1: str
    fd2: str
    uptime: float | None
    init: ProcStat | None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def log_path(self) -> str:
        """The file its output goes to (fd 1, else fd 2), or "" (a pipe, a terminal, nothing)."""
        for link in (self.fd1, self.fd2):
            if output_of(link) == "file":
                return link
        return ""

    @property
    def output(self) -> str:
        return "file" if self.log_path else output_of(self.fd1)

    @property
    def age_s(self) -> float | None:
        return None if self.uptime is None else max(0.0, self.uptime - self.stat.start_time / CLK_TCK)

    def own_group(self) -> int:
        """The group stop may signal: the job's own, else its pid (see the module doc)."""
        st = self.stat
        if st.pid <= 1:
            return st.pgid  # PID 1: never signalled (unsafe_ids says so when stop is asked)
        shared = self.init is not None and st.pgid in (self.init.pgid, self.init.pid)
        return st.pgid if st.pgid == st.pid and st.pgid > 1 and not shared else st.pid

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "argv": self.argv, "cwd": self.cwd, "start_time": self.stat.start_time, "pgid": self.stat.pgid,
                "sid": self.stat.sid, "ppid": self.stat.ppid, "stdout": self.fd1, "stderr": self.fd2, "output": self.output,
                "age_s": None if self.age_s is None else round(self.age_s, 1), "env": self.env}


def _command(pid: int, mark: str) -> str:
    d = f"/proc/{int(pid)}"
    q = shlex.quote
    parts = {"uptime": "cat /proc/uptime", "init": "cat /proc/1/stat", "stat": f"cat {q(d + '/stat')}",
             "cwd": f"readlink {q(d + '/cwd')}", "fd1": f"readlink {q(d + '/fd/1')}", "fd2": f"readlink {q(d + '/fd/2')}",
             "cmdline": f"cat {q(d + '/cmdline')}", "environ": f"cat {q(d + '/environ')}"}
    return "; ".join(f"echo {q(mark + name)}; {parts[name]} 2>/dev/null; echo" for name in _PARTS) + "; true"


def _split(out: bytes, mark: str) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    chunks = out.split(mark.encode())
    for chunk in chunks[1:]:
        name, _, body = chunk.partition(b"\n")
        found[name.decode("ascii", "replace")] = body[:-1] if body.endswith(b"\n") else body
    return found


async def read_process(ctx: ActionContext, pid: int) -> Adoptee:
    """Read the process to adopt in one remote command; :class:`StageFailed` (``process``) when it
    is not there to adopt: gone, a zombie, dead, or not readable."""
    if pid <= 0:
        raise StageFailed(Layer.PROCESS, f"{pid} is not a process id", advice="give the pid as the target shows it (cockpit's process pane)")
    mark = f"@@adopt-{secrets.token_hex(4)}-"
    res = await ctx.run(_command(pid, mark), timeout=10)
    parts = _split(res.stdout, mark)
    text = {k: v.decode("utf-8", "replace").strip() for k, v in parts.items() if k not in ("cmdline", "environ")}
    stat = read_stat(text.get("stat", ""))
    where = ctx.cfg.display_name
    if stat is None:
        raise StageFailed(Layer.PROCESS, f"no process {pid} in {where}: it is gone (or never was)",
                          evidence=res.evidence(), advice="list the target's processes (the process pane, cockpit status) and adopt a live pid")
    if stat.state.startswith(("Z", "X")):
        raise StageFailed(Layer.PROCESS, f"pid {pid} ({stat.comm}) is a zombie ({stat.state}): it has exited and waits for its "
                          f"parent {stat.ppid} to reap it; there is no job left to adopt", evidence=res.evidence(),
                          advice="read its log for how it ended; the next attempt launches [job] command")
    argv = [a.decode("utf-8", "replace") for a in parts.get("cmdline", b"").split(b"\0") if a]
    if not argv:
        raise StageFailed(Layer.PROCESS, f"pid {pid} ({stat.comm}) has no command line: a kernel thread, or not readable as this user",
                          evidence=res.evidence(), advice="adopt the training process itself (connect as its user or as root)")
    env: dict[str, str] = {}
    for raw in parts.get("environ", b"").split(b"\0"):
        k, sep, v = raw.decode("utf-8", "replace").partition("=")
        if sep and k.startswith(_ENV_PREFIXES):
            env[k] = "***" if secret_env_name(k) else v
    try:
        uptime: float | None = float(text.get("uptime", "").split()[0])
    except (IndexError, ValueError):
        uptime = None
    return Adoptee(pid, stat, argv, text.get("cwd", ""), text.get("fd1", ""), text.get("fd2", ""), uptime,
                   read_stat(text.get("init", "")), env)


def adopted_record(p: Adoptee, attempt: int) -> JobRecord:
    """The job record of an adopted process (see the module doc)."""
    age = p.age_s
    return JobRecord(attempt=attempt, pid=p.pid, pgid=p.own_group(), start_time=p.stat.start_time, log_path=p.log_path,
                     launcher="adopted", launched_at=time.time() - age if age is not None else 0.0, command=shlex.join(p.argv),
                     workdir=p.cwd, adopted=True)


def adopted_command(job: JobRecord, offset: int, read_max: int = READ_MAX) -> str:
    """One reading of an adopted job, in the shape :func:`~.jobstate.parse_state` reads: the job's
    pid as the "supervisor", no exit file, the job's stat line and its children's and grandchildren's."""
    q = shlex.quote
    pid = int(job.pid or 0)
    log = q(job.log_path) if job.log_path else "''"
    tail = (f"tail -c +{offset + 1} {log} 2>/dev/null | head -c {int(read_max)}" if offset >= 0 else f"tail -c {-offset} {log} 2>/dev/null")
    return (
        f"echo pid={pid}; echo exit=; echo exit_mtime=; "
        f"if [ -n {log} ] && [ -e {log} ]; then echo \"size=$(wc -c < {log})\"; " + echo_time("log_mtime", f"stat -c %.3Y {log}", f"stat -c %Y {log}")
        + "else echo size=-1; fi; " + echo_time("now", "date +%s.%N 2>/dev/null", "date +%s")
        + "echo \"tz=$(date +%z)\"; echo \"init=$(cat /proc/1/stat 2>/dev/null)\"; echo @@stat; "
        f"if [ -d /proc/{pid} ]; then k=$(cat /proc/{pid}/task/*/children 2>/dev/null); g=; "
        "for c in $k; do g=\"$g $(cat /proc/$c/task/*/children 2>/dev/null)\"; done; "
        f"for c in {pid} $k $g; do cat /proc/$c/stat 2>/dev/null; echo; done; fi; "
        f"echo @@log; {tail}"
    )


class AdoptedState(JobState):
    """A reading of an adopted job: no supervisor, the job's own process is its leader."""

    @property
    def leader(self) -> ProcStat | None:
        return self.supervisor  # parse_state kept it only with the recorded start time

    def identity(self, job: JobRecord) -> str:
        lead = self.supervisor
        what = f" ({lead.comm})" if lead is not None else ""
        return f"adopted pid {job.pid}{what}, group {job.pgid}, start time {job.start_time}"

    def scheduler_cause(self, job: JobRecord, scan: LogScan) -> Any:
        """The end of a job cockpit is not the parent of: its exit status is never observed.  Gone with no
        error after a last line that says training ended (``training finished``) is ``finished`` by its own
        word, as a launched job whose status went unobserved is (:func:`~.survivors.gone_cause`): it was
        told "died (process)" and failed verify at ``alive``."""
        err = error_cause(scan)
        unseen = "its exit status cannot be observed (cockpit did not start it)"
        data = {"exit_code": None, "adopted": True, "first_error": scan.error(), "last_progress": scan.last_progress}
        after = time.time() - job.launched_at if job.launched_at else None
        if err is not None:
            return Cause(err.layer, f"adopted pid {job.pid} is gone; {unseen}: {err.detail}", err.advice, {**data, **err.data}, "died", after)
        if (said := said_ended(scan)) is not None:
            return Cause(Layer.APP, f"adopted pid {job.pid} is gone with no error in its log after its last line said training ended "
                         f"({said[:160]}); {unseen}", "", data, "finished", after)
        last = f"; its last line: {scan.tail_lines[-1][:160]}" if scan.tail_lines else ""
        return Cause(Layer.PROCESS, f"adopted pid {job.pid} is gone with no error in its log; {unseen}{last}",
                     "killed from outside, or it ended on its own: read the log's end", data, "died", after)


class AdoptedReader(JobReader):
    """:class:`~.jobstate.JobReader` for an adopted job (:func:`adopted_command`, :class:`AdoptedState`)."""

    def command(self, offset: int) -> str:
        return adopted_command(self.job, offset)

    def parse(self, out: bytes) -> JobState:
        base = parse_state(out, self.job)
        st = AdoptedState(**{f.name: getattr(base, f.name) for f in fields(JobState)})
        if st.supervisor is None:
            st.members = []  # the pid is gone or now someone else's: nothing of the job is left
        return st


def job_reader(ctx: ActionContext, job: JobRecord, scan: LogScan | None = None, **kw: Any) -> JobReader:
    """:func:`~.jobstate.reader_for`, with :class:`AdoptedReader` for an adopted job (no pid or exit file to read)."""
    return AdoptedReader(ctx, job, scan, **kw) if job.adopted and not job.scheduler else reader_for(ctx, job, scan, **kw)
