"""Zombie findings: whether PID 1 reaps orphans, and what to do about each zombie.

``zombie`` (layer ``container``)
    a ``Z`` entry: dead, not reaped.  Nothing can kill it; its parent's death (then PID 1 reaps it,
    if PID 1 is an init that reaps) or a reboot of the container clears it.
``zombie-threads`` (layer ``container``)
    a ``Zl`` entry: the thread-group leader exited but other threads are still alive, stuck in the
    kernel (typically the GPU driver).  It cannot be reaped until they leave; reboot.

Judged by persistence (:class:`ZombieWatch`): right after a job is killed its orphans are briefly
``Z`` until PID 1 reaps them, so a zombie of PID 1 (or of a parent that is itself exiting) that the
watch first saw less than ``grace`` seconds ago is not yet a finding.  One that outlives the grace
is; so is every zombie present at the watch's first look (its age is unknown: judged as it always
was, which keeps the seed's long-lived ``Zl`` named at once).
"""

from __future__ import annotations

import os
import re
from typing import Any

from ...layers import Finding, Layer, Severity
from ..text import fmt_age
from .tree import Proc, ProcTree

__all__ = ["INIT_REAPS", "ZOMBIE_GRACE", "ZombieWatch", "zombie_grace", "awaits_reaping", "pid1_reaps", "zombie_findings"]

#: seconds a fresh zombie of PID 1 (or of an exiting parent) is given to be reaped before it counts
ZOMBIE_GRACE = 2.0


def zombie_grace(cfg: object) -> float:
    """``[job] zombie_grace`` when the config has it (seconds, 0 or more), else :data:`ZOMBIE_GRACE`."""
    v = getattr(getattr(cfg, "job", None), "zombie_grace", None)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else ZOMBIE_GRACE

#: PID 1 programs and whether they reap orphaned children (None: depends / unknown).
INIT_REAPS: dict[str, bool | None] = {
    "systemd": True,
    "init": True,
    "tini": True,
    "tini-static": True,
    "dumb-init": True,
    "s6-svscan": True,
    "s6-linux-init": True,
    "runit": True,
    "runit-init": True,
    "runsvdir": True,
    "docker-init": True,
    "catatonit": True,
    "openrc-init": True,
    "upstart": True,
    "my_init": True,
    "supervisord": True,  # its reap loop waits on any pid, orphans included
    "lxc-init": True,
    "sh": None,  # a shell reaps only at certain moments (between commands, in `wait`)
    "bash": None,
    "dash": None,
    "ash": None,
    "busybox": None,
    "zsh": None,
    "sleep": False,
    "tail": False,
    "cat": False,
    "python": False,
    "python3": False,
    "node": False,
    "java": False,
    "jupyter": False,
    "jupyter-lab": False,
    "sshd": False,
}


def pid1_reaps(pid1: Proc | None) -> bool | None:
    """Whether this PID 1 reaps orphans: True (a known init), False (known not to), None."""
    if pid1 is None:
        return None
    names = [pid1.comm]
    first = pid1.args.split(" ", 1)[0] if pid1.args else ""
    if first:
        names.append(os.path.basename(first))
    for n in names:
        n = n.strip()
        if n in INIT_REAPS:
            return INIT_REAPS[n]
        m = re.match(r"(python|node|java)[\d.]*\Z", n)
        if m:
            return False
    return None


def awaits_reaping(z: Proc, tree: ProcTree) -> bool:
    """Whether ``z``'s reaper is on its way: it is PID 1's (orphaned), or its parent is exiting
    (a zombie itself, or gone from the table since; a parent outside the namespace, ppid 0, is not)."""
    if z.ppid == 1:
        return True
    parent = tree.parent(z.pid)
    if parent is None:
        return z.ppid != 0 and z.ppid not in tree
    return parent.is_zombie or parent.code == "X"


class ZombieWatch:
    """When each zombie was first seen, across the polls of one observer.

    :meth:`young` answers the zombies that are not yet findings: ones of PID 1 or of an exiting
    parent (:func:`awaits_reaping`) first seen less than ``grace`` seconds ago.  At the first look
    nothing is young: a zombie already there has an unknown age and is judged as before.
    """

    def __init__(self, grace: float = ZOMBIE_GRACE) -> None:
        self.grace = grace
        self._first: dict[tuple[int, str], float] | None = None  # None: no look yet

    def young(self, tree: ProcTree, now: float) -> set[int]:
        seen = self._first
        first: dict[tuple[int, str], float] = {}
        out: set[int] = set()
        for p in tree.by_pid.values():
            if not p.is_zombie:
                continue
            key = (p.pid, p.comm)
            t = seen.get(key, now) if seen is not None else float("-inf")
            first[key] = t
            if now - t < self.grace and awaits_reaping(p, tree):
                out.add(p.pid)
        self._first = first
        return out

    def seen_for(self, pid: int, comm: str, now: float) -> float | None:
        """Seconds since the watch first saw this zombie (None: at the first look, or never)."""
        t = (self._first or {}).get((pid, comm))
        return None if t is None or t == float("-inf") else now - t


def _short(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


_REBOOT = "only the parent's death or a reboot of the container clears it"


def _zombie_advice(z: Proc, tree: ProcTree, reaps: bool | None) -> str:
    parent = tree.parent(z.pid)
    pid1 = tree.pid1
    p1 = pid1.name if pid1 else "PID 1"
    if z.multithreaded:
        return (
            "Its other threads are still alive, stuck in the kernel (often the GPU driver: check the "
            "host's kernel messages for an Xid); no signal ends them and it cannot be reaped until "
            "they leave: reboot the container (a wedged GPU may need a reset or a host reboot)."
        )
    if parent is None:
        return (
            f"Its parent (ppid {z.ppid}) is outside this PID namespace, e.g. a `pct exec`/`lxc-attach` "
            "session on the host: it is reaped when that session ends. End that session on the host, "
            "or reboot the container."
        )
    if parent.pid == 1:
        if reaps is True:
            return (
                f"PID 1 ({p1}) reaps orphans, so this should vanish within moments; if it stays across "
                "polls, PID 1 is not calling wait() (hung?): reboot the container."
            )
        if reaps is False:
            return (
                f"PID 1 ({_short(pid1.args, 60) if pid1 else '?'}) is not an init and never reaps orphans: "
                "zombies pile up until the container reboots. Reboot it, and run the job under an init "
                "(systemd, tini, dumb-init)."
            )
        return (
            f"PID 1 ({p1}) may not reap orphans (a shell reaps only at times); "
            f"{_REBOOT}. Reboot the container, or run PID 1 as a real init (tini, systemd)."
        )
    tail = (
        "PID 1 then reaps it"
        if reaps is True
        else "but PID 1 does not reap, so reboot the container"
        if reaps is False
        else "and PID 1 may or may not reap it"
    )
    return (
        f"A dead process cannot be killed: its parent {parent.pid} ({_short(parent.args, 60)}) has not "
        f"called wait(). Ending the parent hands it to PID 1 ({tail}); {_REBOOT}."
    )


def _zombie_finding(group: list[Proc], tree: ProcTree, reaps: bool | None, in_job: bool) -> Finding:
    z = group[0]
    parent = tree.parent(z.pid)
    pname = f"{parent.pid} ({parent.name})" if parent else f"{z.ppid} (outside this PID namespace)"
    pid1 = tree.pid1
    if z.multithreaded:
        kind = "zombie-threads"
        more = f"{z.threads - 1} thread(s)" if z.threads > 1 else "some threads"
        summary = (
            f"pid {z.pid} ({z.name}, started {fmt_age(z.elapsed_s)} ago) is a zombie ({z.state}) with {more} "
            f"still alive, stuck in the kernel; parent {pname}"
        )
    elif len(group) == 1:
        kind = "zombie"
        summary = (
            f"pid {z.pid} ({z.name}, started {fmt_age(z.elapsed_s)} ago) is a zombie ({z.state}): "
            f"parent {pname} has not reaped it"
        )
    else:
        kind = "zombie"
        oldest = max(g.elapsed_s for g in group)
        names = sorted({g.name for g in group})
        summary = (
            f"{len(group)} zombies ({', '.join(names[:3])}{'…' if len(names) > 3 else ''}, the oldest started "
            f"{fmt_age(oldest)} ago): parent {pname} has not reaped them"
        )
    if in_job:
        summary += " — the job"
    subject: dict[str, Any] = {
        "pid": z.pid,
        "ppid": z.ppid,
        "comm": z.comm,
        "args": z.args,
        "state": z.state,
        "elapsed_s": z.elapsed_s,
        "threads": z.threads,
        "parent_pid": parent.pid if parent else None,
        "parent_comm": parent.comm if parent else None,
        "parent_args": parent.args if parent else None,
        "pid1_comm": pid1.comm if pid1 else None,
        "pid1_args": pid1.args if pid1 else None,
        "pid1_reaps": reaps,
        "job": in_job,
    }
    if len(group) > 1:
        subject["pids"] = [g.pid for g in group]
    return Finding(
        layer=Layer.CONTAINER,
        kind=kind,
        summary=summary,
        advice=_zombie_advice(z, tree, reaps),
        severity=Severity.ERROR if (in_job or z.multithreaded) else Severity.WARNING,
        subject=subject,
    )


def zombie_findings(tree: ProcTree, members: set[int], reaps: bool | None, young: set[int] | frozenset[int] = frozenset()) -> list[Finding]:
    """One finding per zombie of the job and per ``Zl`` zombie; the other zombies grouped by parent.
    ``young`` (:meth:`ZombieWatch.young`): zombies whose reaper may still be on its way, not yet findings."""
    findings: list[Finding] = []
    plain: dict[int, list[Proc]] = {}
    for p in sorted(tree.by_pid.values(), key=lambda p: p.pid):
        if not p.is_zombie or p.pid in young:
            continue
        in_job = p.pid in members
        if p.multithreaded or in_job:
            findings.append(_zombie_finding([p], tree, reaps, in_job))
        else:
            plain.setdefault(p.ppid, []).append(p)
    for _, group in sorted(plain.items()):
        findings.append(_zombie_finding(group, tree, reaps, False))
    return findings


def engine_advice(advice: str, engine: str) -> str:
    """The zombie advice for a docker/podman container: it is restarted, not rebooted, and its PID 1
    is often the job itself or a shell that never reaps, which ``--init`` (tini) cures for good."""
    if "reboot" not in advice.lower() and "PID 1" not in advice:
        return advice
    text = advice.replace("reboot of the container", f"restart of the container ({engine} restart)")
    text = text.replace("Reboot the container", "Restart the container").replace("reboot the container", "restart the container")
    text = text.replace("until the container reboots", "until the container restarts").replace("Reboot it", "Restart it")
    return text + f" For good: start it with `{engine} run --init …` (tini as PID 1 reaps orphans)."
