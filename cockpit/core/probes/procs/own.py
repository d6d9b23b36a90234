"""Cockpit's own processes inside the target: the session shell and what it runs for probes.

On an idle container most of the process table would otherwise be cockpit looking at it: the
persistent session's shell, its subshells, ``timeout`` and ``ps``.  :func:`own_processes` finds
them from the session shell's pid (the session learns it when it starts; the target's own pid, as
``ps`` inside the container shows it): the shell and its descendants that stayed in its session.
A job cockpit launched from that shell is never among them: it leaves the session (``setsid``),
it is re-parented once its launcher exits, and the job's own processes are excluded by name.
"""

from __future__ import annotations

from collections.abc import Iterable

from .tree import ProcTree

__all__ = ["own_processes"]


def own_processes(tree: ProcTree, shell_pid: int | None, exclude: Iterable[int] = ()) -> set[int]:
    """Pids of the session shell ``shell_pid`` and its descendants in its session (``sid``),
    minus ``exclude`` (the job's processes) and their descendants; empty when the shell is not in
    ``tree`` (another pid namespace, or the session was rebuilt since)."""
    shell = tree.get(shell_pid) if shell_pid is not None else None
    if shell is None:
        return set()
    keep_out = set(exclude)
    for pid in list(keep_out):
        keep_out |= {d.pid for d in tree.descendants(pid)} if pid in tree else set()
    own = {shell.pid} if shell.pid not in keep_out else set()
    for d in tree.descendants(shell.pid):
        if d.pid in keep_out:
            continue
        if d.sid == shell.sid:
            own.add(d.pid)
    return own
