"""What a launch records about the job, and the small helpers every job action shares.

:class:`JobRecord` (enough to find the job again, and only it), how its ids are judged before a
signal (:func:`unsafe_ids`, :func:`signal_group`), how an exit status reads
(:func:`describe_exit`), the launch id and the redaction of a launch command.  A leaf of the
actions: launch, stop, the strays, the job reader and the schedulers all build on it, and it
builds on none of them, not even the action's context (the reads of the target's process table
that need one are in :mod:`.proctable`), so the context and the runtime interface can name it.
"""

from __future__ import annotations

import secrets
import signal
import time
from dataclasses import asdict, dataclass
from typing import Any

from ..layers import Evidence
from ..redact import Redactor

__all__ = ["JobRecord", "KNOWN_REAPERS", "signal_group", "start_time_guard", "unsafe_ids", "signal_name", "describe_exit", "new_launch_id",
           "unit_safe", "redact_evidence"]

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
    #: the target (its config's name) that launched it: a config file beside it for the same
    #: container says whose job it stops ("" in records written before)
    target: str = ""
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
    #: the survivor is a process the job's main process started, training on after its exit (:mod:`.forked`)
    forked: bool = False
    #: a job cockpit did not start but took over (:mod:`.adopt`): no supervisor, no pid or exit
    #: file; it is read, followed and stopped by its pid and start time
    adopted: bool = False
    #: the directory of torch.compile's structured trace (``TORCH_TRACE``) the job writes; empty: none
    trace_dir: str = ""
    #: the job's main process as verify last saw it alive under its supervisor (and whether progress
    #: was seen by then), journalled after verify: a later cockpit that never saw it still tells the
    #: trainer's own exit status from a launcher's while the workers it started linger (:mod:`.survivors`)
    main_pid: int | None = None
    main_start: int | None = None
    main_comm: str = ""
    main_progressed: bool = False

    def main_fields(self) -> dict[str, Any]:
        """The ``main_*`` fields (what a later ``job`` event adds to the record)."""
        return {"main_pid": self.main_pid, "main_start": self.main_start, "main_comm": self.main_comm,
                "main_progressed": self.main_progressed}

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


def redact_evidence(ev: Evidence, env: dict[str, str]) -> Evidence:
    """The launch command as evidence, with the values of secret-named ``[job.env]`` keys
    (:func:`~cockpit.core.redact.secret_env_name`: HF_TOKEN, DB_PASSWORD, WANDB_API_KEY…) and
    well-known secret shapes replaced by ``***``: they must not reach the journal, the screen or an
    export.  Other values (paths, flags) stay: they are evidence."""
    return Redactor(env).evidence(ev)


def unit_safe(name: str) -> str:
    """``name`` as a part of a unit or job name: its letters, digits, - and _ (40 at most)."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40] or "job"


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


def start_time_guard(pid: int, start_time: int) -> str:
    """A shell test that holds only while ``/proc/PID/stat`` field 22 still equals ``start_time``
    (checked in the same command as the signal it guards: a pid reused since the last look fails it)."""
    # fields after the last ')' start at field 3, so field 22 is the 20th of them
    return (f"s=$(cat /proc/{int(pid)}/stat 2>/dev/null) && s=${{s##*) }} && set -- $s && "
            f"[ \"${{20}}\" = {int(start_time)} ]")


def signal_group(sig: str, job: JobRecord, *, start_time: int | None = None) -> str:
    """Signal the job's process group, every other group of its session (a process that made its
    own group, :mod:`.survivors`), and its pid, in case it left the group.  TERM is followed by
    CONT to the same, as systemd sends it: a stopped process (``kill -STOP``, a debugger, Ctrl-Z)
    holds TERM pending until it runs, and would meet only the KILL.

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
        one = f"{start_time_guard(p, start_time)} && {one}"
    # the session the supervisor leads has the group's id; its other groups (fields 5 and 6 of stat)
    sess = (f"for f in /proc/[0-9]*/stat; do read -r l 2>/dev/null < \"$f\" || continue; set -- ${{l##*) }}; "
            f"[ \"$4\" = {g} ] && [ \"$3\" != {g} ] && [ \"$3\" -gt 1 ] 2>/dev/null && kill -s {sig} -- -\"$3\" 2>/dev/null; done")
    text = f"kill -s {sig} -- -{g} 2>/dev/null || kill -{sig} -{g} 2>/dev/null; {sess}; {one}; true"
    return f"{text}; {signal_group('CONT', job, start_time=start_time)}" if sig == "TERM" else text
