"""A launcher that exits is not the job's end: the job is its process group.

Many jobs are started through a wrapper: ``command = "sh launch.sh"`` where ``launch.sh`` runs
``nohup python train.py … &`` and exits 0 at once (the shape of cluster wrappers and of
``torchrun``'s agent).  Cockpit's supervisor waits for *its* child, the launcher, and writes the
launcher's exit status; the trainer lives on in the same log.  Read as the job's end, that status
made the attempt ``untested (process)`` ("exited with code 0") and the fate ``finished`` while
the trainer wrote on.

**What counts as the job.**  The supervisor leads a new session and process group
(``setsid``, or a systemd unit), so both ids equal its pid.  A non-interactive shell has no job
control: ``cmd &`` and ``nohup cmd &`` keep the launcher's process group, so every process the
launcher starts that way stays in it after the launcher exits (it is re-parented to PID 1, which
is why the supervisor's tree no longer shows it).  Cockpit follows **the job's process group and
its session** (a process that made a group of its own, ``setpgid`` or
``Popen(process_group=0)``, stays in the session): that is also what ``stop`` signals (the group,
then every other group of the session: :func:`~.job.signal_group`), and what the GPU mapping calls
the job.  A process that leaves the session (``setsid``, a daemon's double fork) has left the job
the way a daemon leaves its parent: it is not followed, and not stopped once it has left the job's
tree too (stop signals a descendant in a session of its own: :func:`~.stop._own_sessions`).  When the log still grows
after the launcher's exit while nothing of the group or session is left, the verdict says so
instead of reading the launcher's status as the job's.

**How it reads.**  :func:`follow_survivors` runs on every reading of the job
(:class:`~.jobstate.JobReader`): when the exit status is written and live processes of the group
remain, the status is the *launcher's* (:attr:`JobState.launcher_exit`), the job goes on, and its
leader is the survivor (a non-shell first, the oldest first) so alive, stacks, loop death and the
stall follow it; the job record learns it (``survivor_pid``, its start time and command line).
A survivor that goes away within :data:`LINGER_S` without having written a byte after the
launcher's exit (a data-loader worker that outlives its parent by a moment) changes nothing: the
status is the job's again.

**A trainer is not a launcher.**  When the reader saw the job's main process alive under its
supervisor (a program such as ``python3``, not a wrapping shell) and *that* process is what exited,
having failed or made progress first, the status is the job's own however long the processes it
started linger (torch's data-loader workers notice their parent's death only at their next
five-second status check; a worker may write a ``BrokenPipeError`` on its way out): they are named
as leftovers (:func:`leftovers_note`), never followed as "the trainer".  Before, a trainer that
exited 1 (or was killed) with a worker lingering read ``passed`` and ``finished``, and one that
exited 0 read ``died (app)`` from its worker's traceback, "its exit status was not observed".
A wrapping shell that exits 0 after progress is the job's end too when nothing it leaves could be
a trainer (only shells and monitors such as ``sleep`` or ``nvidia-smi dmon``): a ``train.sh`` whose
trainer ran in the foreground read "running: trainer pid N (sleep 60) continues" for as long as
its monitor lived.  A shell that leaves a program behind after progress is still read as a
launcher that waited for its trainer to start (it cannot be told apart by ``/proc``).

**The end.**  The survivor is not cockpit's child, so its exit status is never observed.  When
nothing of the group or session is left but a process that left the session still has the log as
its stdout or stderr (:func:`log_writers`: a daemonized trainer), the end says so and names it,
never "ended with no error" while it writes on.
:func:`gone_cause` tells the end from the log: an error signature → ``died`` at its layer; progress
and no error → ``finished``, saying the status was not observed; neither → ``vanished``
(``process``).  A Slurm job is the scheduler's: nothing here applies to it.
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..layers import Layer
from ..procstat import ProcStat, read_stat
from .base import ActionContext
from .causebase import Cause, error_cause
from .jobrecord import JobRecord

if TYPE_CHECKING:  # pragma: no cover - jobstate imports this module
    from .jobreading import JobState
    from .logscan import LogScan

__all__ = ["MONITORS", "MainSeen", "adopt", "carries_on", "follow_survivors", "gone_cause", "leftovers_note", "main_exited", "name_survivor", "pipeline_note", "pick_survivor", "pipeline_last", "seen_main", "short_command"]

_SHELLS = ("sh", "bash", "dash", "ash", "zsh", "busybox", "nohup", "env")
#: programs a ``train.sh`` leaves running beside its trainer that never carry the training on
MONITORS = frozenset(("sleep", "nvidia-smi", "nvtop", "tail", "watch", "tee", "cat", "top", "htop", "dstat", "vmstat",
                      "iostat", "mpstat", "pidstat", "sar", "free", "logger", "inotifywait", "dcgmi", "rocm-smi"))
#: the longest command line named in a verdict
MAX_CMD = 80
#: a survivor followed this long is the job even if it never wrote to the log (one that goes
#: sooner, silently, was a child lingering a moment after the job's own exit)
LINGER_S = 2.0


def _gone(p: ProcStat) -> bool:
    return p.state.startswith(("Z", "X"))


def pick_survivor(live: list[ProcStat]) -> ProcStat:
    """The process that carries the job on: one that can (:func:`carries_on`: never a train.sh's
    ``sleep`` heartbeat, however old), then a non-shell (the trainer, not a wrapper shell that
    waits for it), the oldest first (the one that started the others)."""
    return min(live, key=lambda p: (not carries_on(p), p.comm in _SHELLS, p.start_time, p.pid))


def short_command(argv: list[str]) -> str:
    """``python3 train.py --lr 3e-4`` from ``/usr/bin/python3 /work/x/train.py --lr 3e-4``: the
    program and its script by their names, the arguments as they are, cut at :data:`MAX_CMD`."""
    if not argv:
        return ""
    words = [os.path.basename(argv[0])] + [os.path.basename(a) if i == 0 and "/" in a and not a.startswith("-") else a
                                           for i, a in enumerate(argv[1:])]
    text = shlex.join(words)
    return text if len(text) <= MAX_CMD else text[: MAX_CMD - 1] + "…"


def _name(job: JobRecord) -> str:
    what = f" ({job.survivor_cmd})" if job.survivor_cmd else ""
    if job.forked:  # the main process's own child trains on (:mod:`.forked`)
        return f"pid {job.survivor_pid}{what}, which it started,"
    return f"trainer pid {job.survivor_pid}{what}"


def _exited(job: JobRecord, code: int | None) -> str:
    """``launcher exited 0``, or ``its main process (python3 pid 12) exited 1`` when what it started trains on."""
    if job.forked:
        return f"its main process ({job.main_comm or '?'} pid {job.main_pid}) exited {code}"
    return f"launcher exited {code}"


def carries_on(p: ProcStat) -> bool:
    """Could ``p`` be a trainer a launcher left behind?  Not a shell (it waits for what it runs)
    and not a monitor (:data:`MONITORS`: ``sleep``, ``nvidia-smi dmon``, ``tail -f``…)."""
    return p.comm not in _SHELLS and p.comm not in MONITORS


@dataclass(frozen=True)
class MainSeen:
    """The job's main process as a reading last saw it alive under its supervisor (its pid, start
    time and name): whether progress was seen by then, and the processes then started by a program
    (not a shell) of the job, such as a trainer's data-loader workers, or orphaned already (their
    parent exited while the main process lives: the workers of a trainer a ``train.sh`` ran in the
    foreground, when no reading caught the trainer alive): those never carry the job on
    (:func:`main_exited`), unless they write progress after its exit (:mod:`.forked`)."""

    pid: int
    start_time: int
    comm: str
    progressed: bool = False
    helpers: frozenset[tuple[int, int]] = frozenset()

    @classmethod
    def of(cls, lead: ProcStat, members: list[ProcStat], progressed: bool) -> MainSeen:
        by_pid = {p.pid: p for p in [lead, *members]}
        helpers = frozenset((p.pid, p.start_time) for p in members
                            if ((q := by_pid.get(p.ppid)) is not None and q.comm not in _SHELLS) or (q is None and p.ppid != lead.ppid))
        return cls(lead.pid, lead.start_time, lead.comm, progressed, helpers)


def seen_main(old: MainSeen | None, st: JobState, progressed: bool) -> MainSeen | None:
    """The job's main process as a reading shows it alive under its supervisor (``old`` when it does
    not), what it started kept as its helpers across readings: a trainer's worker, reparented to
    PID 1 once the trainer exits, is out of the tree in the reading that sees the wrapping shell last.

    The reading's :attr:`~.jobstate.JobState.leader` looks through a wrapping shell with one child;
    a ``train.sh`` seen with two (its ``sleep 60 &`` heartbeat and the trainer) whose trainer has
    just exited has one left, the heartbeat.  That is not a new main process: the script, still
    alive, stays it.  Taken as the main process, the heartbeat outlived the script's exit 0, which
    then read as a launcher's that left the trainer's lingering worker behind as "the trainer"."""
    lead = st.leader
    if st.exit_code is not None or st.supervisor is None or not st.alive or lead is None:
        return old
    if old is not None and lead.ppid == old.pid:  # the old main process's only child now: is it alive?
        lead = next((p for p in st.members if (p.pid, p.start_time) == (old.pid, old.start_time) and not _gone(p)), lead)
    m = MainSeen.of(lead, st.members, progressed)
    if old is not None and (old.pid, old.start_time) == (m.pid, m.start_time):
        m = replace(m, helpers=m.helpers | old.helpers, progressed=m.progressed or old.progressed)
    return m


def main_exited(main: MainSeen | None, code: int, live: list[ProcStat]) -> bool:
    """The status is the job's own, not a launcher's: the job's main process, seen alive under its
    supervisor, is what exited, and it failed, or it made progress before it exited 0 and was
    either a program (not a wrapping shell) or a shell that left no possible trainer behind
    (a ``train.sh`` that ran the trainer in the foreground, its ``nvidia-smi dmon &`` or ``sleep``
    heartbeat lingering, the trainer's data-loader workers on their way out: :func:`carries_on`
    and :attr:`MainSeen.helpers`); what lives on are processes it started (data-loader workers
    notice their parent's death only at their next status check, seconds later; a monitor never),
    not a trainer it left behind."""
    if main is None or (code == 0 and not main.progressed):
        return False  # never seen, or exit 0 before any progress: a launcher, perhaps
    if code == 0 and main.comm in _SHELLS and any(carries_on(m) and (m.pid, m.start_time) not in main.helpers for m in live):
        return False  # a wrapper shell that exits 0 leaving a program behind: a launcher that waited, perhaps
    return all(m.pid != main.pid or m.start_time != main.start_time for m in live)


def pipeline_note(command: str) -> str:
    """``; its status is its pipeline's last command's (tee out.log): the trainer's own is not observed
    (set -o pipefail)`` when the job's command is a pipeline (``python3 train.py | tee out.log``: the
    shell's status is ``tee``'s, 0 when the trainer exited 1 or was killed), else ""."""
    last = pipeline_last(command)
    return f"; its status is its pipeline's last command's ({last}): the trainer's own is not observed (set -o pipefail)" if last else ""


def pipeline_last(command: str) -> str:
    """The last command of the job's command when it is a pipeline (``tee -a out.log``), else ""."""
    try:
        words = list(shlex.shlex(command, posix=True, punctuation_chars=True))
    except ValueError:
        return ""
    pipes = [i for i, w in enumerate(words) if w in ("|", "|&")]
    return short_command(words[pipes[-1] + 1:]) if pipes else ""


def leftovers_note(st: JobState) -> str:
    """``; 1 process it started lives on (pid 74 python3)`` when the job's main process exited before
    processes it started (:func:`main_exited`), else ""."""
    if not st.leftovers:
        return ""
    n = len(st.leftovers)
    who = ", ".join(f"pid {p.pid} {p.comm}" for p in st.leftovers[:3]) + (", …" if n > 3 else "")
    return f"; {n} process{'es' if n > 1 else ''} it started live{'' if n > 1 else 's'} on ({who})"


def adopt(job: JobRecord, st: JobState, main: MainSeen | None = None) -> ProcStat | None:
    """Judge one parsed reading (see the module doc): a written exit status with live processes of
    the group left is the launcher's, unless the job's main process ``main`` (as last seen alive)
    is what exited (:func:`main_exited`).  Returns the
    survivor when it is new to the record (its command line is worth reading once), else None.
    Changes ``st`` and ``job`` in place."""
    if job.scheduler or not st.parsed or st.exit_code is None or st.supervisor is not None:
        return None  # running under its supervisor, or a scheduler's job: nothing to adopt
    code = st.exit_code
    live = [m for m in st.members if not _gone(m)]
    # the job's own status when its main process is what exited, or when nothing left could carry the
    # training on (a monitor, a shell: a train.sh's `sleep` heartbeat outliving a trainer no reading
    # caught alive is no trainer the launcher left behind); what it started is on its way out
    if job.survivor_pid is None and (main_exited(main, code, live) or (live and not any(carries_on(m) for m in live))):
        st.leftovers = live
        return None
    if job.launcher_log_size is None and job.survivor_pid is None:
        job.launcher_log_size = st.log_size  # the log as it was when the launcher's status was first seen
    if live:
        lead = pick_survivor(live)
        st.members = [lead] + [m for m in st.members if m is not lead]
        st.launcher_exit, st.exit_code, st.exit_at = code, None, None
        job.launcher_exit = code
        new = job.survivor_pid != lead.pid or job.survivor_start != lead.start_time
        if new:
            job.survivor_pid, job.survivor_start, job.survivor_cmd = lead.pid, lead.start_time, lead.comm
            job.survivor_since = job.survivor_since or time.time()
        st.launcher_note = f"{_exited(job, code)}; {_name(job)} {'trains on' if job.forked else 'continues'}"
        return lead if new else None
    grew = (job.launcher_log_size is not None and st.log_size > job.launcher_log_size) or (
        st.log_mtime is not None and st.exit_at is not None and st.log_mtime > st.exit_at)
    lasted = job.survivor_since is not None and time.time() - job.survivor_since >= LINGER_S
    if grew or lasted:
        st.launcher_exit, st.exit_code, st.exit_at = code, None, None
        job.launcher_exit = code
        who = _name(job) if job.survivor_pid is not None else "what it left running"
        st.launcher_note = f"{_exited(job, code)}; {who} is gone"
    return None


def needs_group(job: JobRecord, st: JobState) -> bool:
    """The exit status is written while the supervisor still shows (its last moment, or a zombie
    nobody reaps, as on a plain host): the reading holds its tree, not the job's group."""
    return not job.scheduler and st.parsed and st.exit_code is not None and st.supervisor is not None


def group_command(job: JobRecord) -> str:
    """The ``/proc/PID/stat`` lines that may be the job's group or session (the caller filters)."""
    pg = int(job.pgid or 0)
    # `|| :`: a process that exits between the glob and its read fails the redirection (status 2);
    # were it the last one, the scan itself would exit 2 and read as failed
    return f"for f in /proc/[0-9]*/stat; do read -r l 2>/dev/null < \"$f\" && case \"$l\" in *\") \"?\" \"*\" {pg} \"*) echo \"$l\";; esac || :; done"


async def read_group(ctx: ActionContext, job: JobRecord, st: JobState) -> None:
    """Replace a reading's supervisor tree by the job's process group and session (see :func:`needs_group`)."""
    res = await ctx.run(group_command(job), timeout=10)
    sup = st.supervisor.pid if st.supervisor is not None else None
    members = [p for p in (read_stat(line) for line in res.text.splitlines() if line.strip()) if p is not None]
    st.supervisor = None
    st.members = [p for p in members if job.pgid in (p.pgid, p.sid) and p.pid != sup]


async def follow_survivors(ctx: ActionContext, job: JobRecord, st: JobState, main: MainSeen | None = None) -> None:
    """:func:`adopt`, and the new survivor's command line read once (the verdict names it)."""
    if needs_group(job, st) and job.pgid and job.pgid > 1:
        await read_group(ctx, job, st)
    lead = adopt(job, st, main)
    code = st.exit_code
    # the status read as the job's and nothing of its session left: a daemon may still write the log
    # (even when the main process was seen alive: a launcher that daemonizes its trainer and exits 0
    # was read "the trainer, exited 0" once the daemon's first line came while it still lived)
    left = code is not None and st.parsed and not job.scheduler and st.supervisor is None and not st.leftovers
    if (st.launcher_exit is not None or left) and not st.alive and job.log_path:  # nothing of the session is left
        st.outside = await log_writers(ctx, job, st)
        if st.outside and code is not None:  # the log is still written: the status was a launcher's
            st.launcher_exit, st.exit_code, st.exit_at = code, None, None
            job.launcher_exit = code
    if lead is not None:
        await name_survivor(ctx, job, st, lead)


async def name_survivor(ctx: ActionContext, job: JobRecord, st: JobState, lead: ProcStat) -> None:
    """The new survivor's command line, read once (the verdict names it)."""
    res = await ctx.run(f"head -c 4096 /proc/{int(lead.pid)}/cmdline 2>/dev/null", timeout=5)
    argv = [a.decode("utf-8", "replace") for a in res.stdout.split(b"\0") if a]
    if argv and job.survivor_pid == lead.pid:
        job.survivor_cmd = short_command(argv)
        st.launcher_note = f"{_exited(job, job.launcher_exit)}; {_name(job)} {'trains on' if job.forked else 'continues'}"


def writers_command(log_path: str) -> str:
    """The ``/proc/PID/stat`` lines of every process whose stdout or stderr is the log, in one ``ls``."""
    return (f"ls -l /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2 2>/dev/null | awk -v l={shlex.quote(log_path)} "
            "'$NF == l { split($(NF-2), a, \"/\"); print a[3] }' | sort -u | "
            "while read -r p; do cat /proc/$p/stat 2>/dev/null; echo; done")


async def log_writers(ctx: ActionContext, job: JobRecord, st: JobState) -> list[ProcStat]:
    """Live processes that still write the job's log although nothing of its group or session is
    left: what left the session (``setsid``, a daemon's double fork) and trains on (one command)."""
    res = await ctx.run(writers_command(job.log_path), timeout=10)
    procs = [p for p in (read_stat(line) for line in res.text.splitlines() if line.strip()) if p is not None]
    return [p for p in procs if not _gone(p) and p.pid != job.pid]


def _outside(st: JobState) -> str:
    p = st.outside[0]
    more = f" (+{len(st.outside) - 1} more)" if len(st.outside) > 1 else ""
    return (f"nothing of the job's session is left, but its log is still written by pid {p.pid} ({p.comm}){more}, which left "
            "the session (setsid, or a daemon's double fork): cockpit neither follows nor stops it")


def gone_cause(job: JobRecord, st: JobState, scan: LogScan) -> Cause | None:
    """How the job ended when its launcher exited first and what it left running is gone now (no
    exit status to read: see the module doc); None when that is not the case.  A process that left
    the session and still writes the log (:func:`log_writers`) is named: the job did not end there."""
    if st.launcher_exit is None or st.exit_code is not None or st.alive:
        return None
    if st.outside:
        data = {"launcher_exit": st.launcher_exit, "outside": [{"pid": p.pid, "comm": p.comm} for p in st.outside],
                "last_progress": scan.last_progress, "first_error": scan.error()}
        err = error_cause(scan)
        head = f"launcher exited {st.launcher_exit}; {_outside(st)}"
        if err is not None:
            return Cause(err.layer, f"{head}: {err.detail}", err.advice, {**data, **err.data}, "died")
        ok = st.launcher_exit == 0
        return Cause(Layer.APP if ok else Layer.PROCESS, head + (f"; no error in its log after {scan.progress_count} progress lines" if ok else ""),
                     "", data, "finished" if ok else "died")
    who = f"the {_name(job)}" if job.survivor_pid is not None else "what it left running"
    unseen = f"its exit status was not observed (its {'parent' if job.forked else 'launcher'} exited first)"
    after = None
    if st.log_mtime is not None and st.remote_now is not None and job.launched_at:
        after = max(0.0, time.time() - (st.remote_now - st.log_mtime) - job.launched_at)  # its last log write
    data = {"launcher_exit": st.launcher_exit, "survivor_pid": job.survivor_pid, "survivor_cmd": job.survivor_cmd,
            "last_progress": scan.last_progress, "first_error": scan.error(), "final_error": scan.final_error()}
    head = f"{_exited(job, st.launcher_exit)}; {who} is gone; {unseen}"
    err = error_cause(scan)
    if err is not None:
        return Cause(err.layer, f"{head}: {err.detail}", err.advice, {**data, **err.data}, "died", after)
    if scan.progress_line is not None:
        return Cause(Layer.APP, f"{_exited(job, st.launcher_exit)}; {who} ended with no error in its log after "
                     f"{scan.progress_count} progress lines; {unseen}", "", data, "finished", after)
    return Cause(Layer.PROCESS, f"{head}, with no progress and no error in its log",
                 "read the log; the trainer may have been killed (a signal leaves no line)", data, "vanished", after)
