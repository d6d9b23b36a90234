"""The process model: :class:`Proc` (one process as ``ps`` saw it) and :class:`ProcTree`.

Pure data, no parsing and no findings: :mod:`.parse` builds :class:`Proc` objects from the probe's
output, :mod:`.findings` reads the tree.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Proc", "ProcTree"]


@dataclass(frozen=True)
class Proc:
    """One process as ``ps`` saw it."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str  # full STAT, e.g. "Ss", "Zl", "D", "R+"
    elapsed_s: int
    cpu: float  # %CPU over the process lifetime, as ps computes it (can exceed 100)
    rss_kb: int
    user: str
    comm: str
    args: str
    threads: int = 1
    wchan: str = ""  # kernel wait channel ("" unknown, "-" running)
    node: str = ""  # the compute node it runs on (a Slurm job's processes; "" elsewhere)

    @property
    def code(self) -> str:
        """The one-letter state: R, S, D, Z, T, ..."""
        return self.state[:1]

    @property
    def is_zombie(self) -> bool:
        return self.code == "Z" or self.args.endswith("<defunct>")

    @property
    def is_uninterruptible(self) -> bool:
        return self.code == "D"

    @property
    def multithreaded(self) -> bool:
        return "l" in self.state[1:] or self.threads > 1

    @property
    def name(self) -> str:
        """A short name: ``comm``, or the basename of the first argument when comm is empty."""
        if self.comm:
            return self.comm
        first = self.args.split(" ", 1)[0]
        return os.path.basename(first) or first

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ProcTree:
    """Processes linked by ppid.  Roots are processes whose parent is not in the table (PPID 0
    included: inside a PID namespace a process entered from outside has PPID 0).  Cycles in
    malformed input do not loop: their members become roots too."""

    def __init__(self, procs: Iterable[Proc]) -> None:
        self.by_pid: dict[int, Proc] = {}
        for p in procs:
            self.by_pid.setdefault(p.pid, p)
        self._children: dict[int, list[int]] = {}
        for p in self.by_pid.values():
            if p.ppid != p.pid and p.ppid in self.by_pid:
                self._children.setdefault(p.ppid, []).append(p.pid)
        for kids in self._children.values():
            kids.sort()
        self.roots: list[Proc] = sorted(
            (p for p in self.by_pid.values() if p.ppid == p.pid or p.ppid not in self.by_pid),
            key=lambda p: p.pid,
        )

    def __len__(self) -> int:
        return len(self.by_pid)

    def __contains__(self, pid: object) -> bool:
        return pid in self.by_pid

    def get(self, pid: int) -> Proc | None:
        return self.by_pid.get(pid)

    @property
    def pid1(self) -> Proc | None:
        return self.by_pid.get(1)

    def parent(self, pid: int) -> Proc | None:
        p = self.by_pid.get(pid)
        if p is None or p.ppid == p.pid:
            return None
        return self.by_pid.get(p.ppid)

    def children(self, pid: int) -> list[Proc]:
        return [self.by_pid[c] for c in self._children.get(pid, ())]

    def descendants(self, pid: int) -> list[Proc]:
        out: list[Proc] = []
        seen = {pid}
        stack = list(reversed(self._children.get(pid, ())))
        while stack:
            c = stack.pop()
            if c in seen:
                continue
            seen.add(c)
            out.append(self.by_pid[c])
            stack.extend(reversed(self._children.get(c, ())))
        return out

    def ancestors(self, pid: int) -> list[Proc]:
        """Parent, grandparent, ... up to a root (stops on a cycle)."""
        out: list[Proc] = []
        seen = {pid}
        p = self.parent(pid)
        while p is not None and p.pid not in seen:
            out.append(p)
            seen.add(p.pid)
            p = self.parent(p.pid)
        return out

    def walk(self) -> Iterator[tuple[int, Proc]]:
        """(depth, process) in display order: each root, then its subtree depth-first."""
        seen: set[int] = set()
        pending = [p.pid for p in self.roots]
        leftovers = sorted(self.by_pid)
        while True:
            for root in pending:
                stack = [(0, root)]
                while stack:
                    depth, pid = stack.pop()
                    if pid in seen:
                        continue
                    seen.add(pid)
                    yield depth, self.by_pid[pid]
                    for c in reversed(self._children.get(pid, ())):
                        stack.append((depth + 1, c))
            rest = [pid for pid in leftovers if pid not in seen]
            if not rest:
                return
            pending = rest[:1]  # a cycle: start anywhere in it
