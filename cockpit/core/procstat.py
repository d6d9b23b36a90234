"""One ``/proc/PID/stat`` parser for the whole core (the job's actions, the journal's writer checks,
the fate follower).  ``comm`` (field 2) may hold spaces and parentheses, so the line is split
after the *last* ``)``.  The process-table probe (:mod:`cockpit.core.probes.procs`) reads ``stat``
lines through this parser too, when it falls back to ``/proc``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProcStat", "read_stat", "read_local_stat", "output_kind"]


@dataclass
class ProcStat:
    pid: int
    comm: str
    state: str
    ppid: int
    pgid: int
    sid: int
    start_time: int  # clock ticks since boot, field 22
    threads: int  # field 20
    tpgid: int = -1  # field 8
    utime: int = 0  # field 14, clock ticks
    stime: int = 0  # field 15
    nice: int = 0  # field 19


def read_stat(text: str) -> ProcStat | None:
    """Parse one ``/proc/PID/stat`` line; None for anything malformed."""
    text = text.strip()
    try:
        lpar, rpar = text.index("("), text.rindex(")")
        pid = int(text[:lpar])
        comm = text[lpar + 1 : rpar]
        f = text[rpar + 2 :].split()
        # f[0] is field 3 (state); field N is f[N - 3]
        return ProcStat(pid, comm, f[0], int(f[1]), int(f[2]), int(f[3]), int(f[19]), int(f[17]),
                        tpgid=int(f[5]), utime=int(f[11]), stime=int(f[12]), nice=int(f[16]))
    except (ValueError, IndexError):
        return None


def read_local_stat(pid: int) -> ProcStat | None:
    """``/proc/PID/stat`` of a process on this machine, or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return read_stat(f.read().decode("utf-8", "replace"))
    except OSError:
        return None


def output_kind(link: str) -> str:
    """What an fd's link names: ``file``, ``pipe``, ``tty``, ``socket``, ``null``, ``deleted`` or ``unknown``."""
    if not link or link == "?":
        return "unknown"
    if link.startswith("pipe:"):
        return "pipe"
    if link.startswith("socket:"):
        return "socket"
    if link == "/dev/null":
        return "null"
    if link.startswith(("/dev/pts/", "/dev/tty")) or link == "/dev/console":
        return "tty"
    if link.endswith(" (deleted)"):
        return "deleted"
    if link.startswith("/"):
        return "file"
    return "unknown"
