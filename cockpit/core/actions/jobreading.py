"""One reading of the job, as plain data: :class:`JobState`.

:mod:`.jobstate` takes the reading (one command through the persistent session) and its
:class:`~.jobstate.JobReader` reads the job again and again; the judges beside it (the survivors, a
process that forked, the backlog's dates, the causes) take a reading and name this type.  It lives
below all of them, so none of them stands on the reader that stands on them.

**The job is not its supervisor.**  The supervisor is a ``/bin/sh`` that waits for the command;
:attr:`JobState.leader` is the job's own main process (the supervisor's child, or that child's
only child when the child is itself a shell), and "alive" is judged on the leader: a python in
``Z``/``Zl`` under a live supervisor is not alive, and the thread count is the leader's.  Such a
leader is :attr:`~JobState.reaping`: its death is read again for up to ``[job] zombie_grace``
seconds (verify, the fate follower) so the supervisor can reap it and write the exit status
before it is judged a zombie (a finished job was once told "a zombie" that way).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..procstat import ProcStat

if TYPE_CHECKING:  # pragma: no cover
    from .jobrecord import JobRecord
    from .logscan import LogScan

__all__ = ["JobState", "live_pids", "pid_number"]

_SHELLS = ("sh", "bash", "dash", "ash", "zsh", "busybox")


@dataclass
class JobState:
    """One reading of the job (see the module doc)."""

    pid_text: str = ""
    supervisor: ProcStat | None = None
    members: list[ProcStat] = field(default_factory=list)
    exit_code: int | None = None
    #: the exit file held the status of another launch's supervisor (ignored, but worth saying)
    exit_foreign: str | None = None
    exit_at: float | None = None
    log_size: int = -1
    #: when the log was last written, by the target's clock (seconds since the epoch)
    log_mtime: float | None = None
    remote_now: float | None = None
    #: the target's zone (``date +%z``) in seconds east of UTC: a log line's naive time is placed by it
    tz: int | None = None
    #: the target's PID 1 (its start time tells whether the container rebooted since the launch)
    init: ProcStat | None = None
    #: the recorded job's start time (``/proc/PID/stat`` field 22), to compare with PID 1's
    job_start_time: int | None = None
    data: bytes = b""
    parsed: bool = False
    #: the command's exit status when processes it started outlive it (:mod:`.survivors`), and what to say
    launcher_exit: int | None = None
    launcher_note: str = ""
    #: processes the job's main process started, alive after its own exit status was written (:mod:`.survivors`)
    leftovers: list[ProcStat] = field(default_factory=list)
    #: where the job's log went while the job writes on to it (renamed by a log rotation), read there
    log_moved: str | None = None
    #: the log the job writes to was deleted under it (read through its open descriptor while it lives)
    log_deleted: bool = False
    #: the log was deleted while the job ran, and cannot be read any more: its last bytes are lost
    log_gone: bool = False
    #: processes outside the job's session that still write its log, once nothing of the job is left (:mod:`.survivors`)
    outside: list[ProcStat] = field(default_factory=list)

    @property
    def leader(self) -> ProcStat | None:
        """The job's own main process: the supervisor's child (through one wrapping shell)."""
        if self.supervisor is None:
            live = [m for m in self.members if m.pid != pid_number(self.pid_text)]
            return live[0] if live else None
        kids = [m for m in self.members if m.ppid == self.supervisor.pid]
        if not kids:
            return None
        lead = kids[0]
        grand = [m for m in self.members if m.ppid == lead.pid]
        if lead.comm in _SHELLS and len(grand) == 1:
            return grand[0]
        return lead

    @property
    def rebooted_since(self) -> bool:
        """PID 1 of the target started after the job did: the container was restarted under it."""
        return self.init is not None and self.job_start_time is not None and self.init.start_time > self.job_start_time

    def exit_ago(self) -> float | None:
        """Seconds since the exit status was written, by the target's own clock (no skew)."""
        if self.exit_at is None or self.remote_now is None:
            return None
        return max(0.0, self.remote_now - self.exit_at)

    @property
    def spawned(self) -> bool:
        return bool(self.pid_text)

    @property
    def exited(self) -> bool:
        """The supervisor wrote this launch's exit status, or nothing of the job is left."""
        return self.exit_code is not None or (self.spawned and self.supervisor is None and self.leader is None)

    @property
    def alive(self) -> bool:
        lead = self.leader
        return self.exit_code is None and lead is not None and not lead.state.startswith(("Z", "X"))

    @property
    def reaping(self) -> bool:
        """The main process has exited and its parent, the supervisor, lives on to reap it and write
        the exit status: a ``Z`` leader with no status yet is a death in progress (on a loaded
        machine, or while the kernel frees a large process, that can take more than a moment),
        not yet the zombie it would be if nobody reaped it."""
        lead, sup = self.leader, self.supervisor
        return (self.exit_code is None and lead is not None and lead.state.startswith("Z")
                and sup is not None and not sup.state.startswith(("Z", "X")))

    def describe(self) -> str:
        lead = self.leader
        if lead is None:
            return "no job process"
        text = f"{lead.comm} pid {lead.pid} {lead.state}, {lead.threads} threads"
        if self.log_deleted:
            text += "; its log was deleted (it writes on into the deleted file, read through its open descriptor)"
        elif self.log_moved:
            text += f"; its log was moved to {self.log_moved} (rotated?), and is read there"
        return f"{self.launcher_note}: {text}" if self.launcher_note else text

    # -- what a scheduler's state (cockpit.core.slurm) says differently; a plain job has none of it
    @property
    def queued(self) -> bool:
        """Waiting in a scheduler's queue: never started, so never failed."""
        return False

    def identity(self, job: JobRecord) -> str:
        return f"pid {self.pid_text} (group {job.pgid})"

    def scheduler_cause(self, job: JobRecord, scan: LogScan) -> Any:
        """A scheduler's own explanation of the end (a :class:`~.cause.Cause`), or None: judge as any job."""
        return None

    def scheduler_evidence(self) -> dict[str, Any]:
        return {}


def live_pids(st: JobState) -> frozenset[int]:
    """The job's live processes in a reading: not its supervisor, not a shell, not a zombie."""
    sup = st.supervisor.pid if st.supervisor is not None else None
    return frozenset(m.pid for m in st.members if m.pid != sup and m.comm not in _SHELLS and not m.state.startswith(("Z", "X")))


def pid_number(text: str) -> int | None:
    """A pid file's text as a number (None: not one)."""
    return int(text) if text.strip().isdigit() else None
