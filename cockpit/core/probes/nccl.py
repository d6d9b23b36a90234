"""PyTorch's NCCL watchdog lines: which rank fell behind in a distributed hang.

When a collective times out, each rank's watchdog logs (torchrun prefixes every line with
``[rankN]:``)::

    [rank3]:[E… ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 3] Exception (either an
    error or timeout) detected by watchdog at work: 1532, last enqueued NCCL work: 1532, last
    completed NCCL work: 1531.

(older releases: ``[Rank 3] Timeout at NCCL work: 1532, last enqueued NCCL work: 1532, last
completed NCCL work: 1531.``).  The rank whose *last enqueued* work is lowest never reached the
collective the others wait in: that is the one that fell behind (stuck before it, or dead).
:class:`NcclWatch` collects these per rank and says so.  When every rank that logged a watchdog
line waits in the same work, the one that fell behind is a rank that logged none: a rank that
torchrun's ``[rankN]:`` prefix names elsewhere in the log (stuck in a read, say) is named, with
its last line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["NcclWatch", "RankWork"]

_WORK = re.compile(
    r"Rank (?P<rank>\d+)\][^\n]*?(?:detected by watchdog at work|Timeout at NCCL work): (?P<seq>\d+), "
    r"last enqueued NCCL work: (?P<enq>-?\d+), last completed NCCL work: (?P<done>-?\d+)")

#: torchrun's prefix of every line of a rank's output
_PREFIX = re.compile(r"^\[rank(\d+)\]:")


@dataclass(frozen=True)
class RankWork:
    rank: int
    timed_out_at: int
    last_enqueued: int
    last_completed: int


@dataclass
class NcclWatch:
    ranks: dict[int, RankWork] = field(default_factory=dict)
    #: every rank a ``[rankN]:`` prefix named, and its last line (:meth:`saw`)
    last_lines: dict[int, str] = field(default_factory=dict)

    def saw(self, line: str) -> None:
        """Any line of the log that starts with a rank's prefix (cheap: callers test ``[rank`` first)."""
        if m := _PREFIX.match(line):
            self.last_lines[int(m.group(1))] = line[m.end():].strip()[:160]

    def feed(self, line: str) -> None:
        if "last completed NCCL work" not in line:
            return
        m = _WORK.search(line)
        if m:
            r = int(m["rank"])
            self.ranks[r] = RankWork(r, int(m["seq"]), int(m["enq"]), int(m["done"]))

    def behind(self) -> str:
        """One line naming the rank that fell behind, or what the log cannot tell."""
        if not self.ranks:
            return ""
        works = sorted(self.ranks.values(), key=lambda w: (w.last_enqueued, w.rank))
        low, high = works[0], works[-1]
        if len(works) > 1 and low.last_enqueued < high.last_enqueued:
            others = ", ".join(str(w.rank) for w in works[1:])
            return (f"rank {low.rank} fell behind: its last enqueued NCCL work is {low.last_enqueued}, "
                    f"ranks {others} wait in work {high.timed_out_at}")
        seen = ", ".join(str(w.rank) for w in works)
        waited = (f"rank{'s' if len(works) > 1 else ''} {seen} timed out waiting in NCCL work {high.timed_out_at} "
                  f"(last completed {low.last_completed})")
        silent = sorted(r for r in self.last_lines if r not in self.ranks)
        if not silent:
            return f"{waited}: the rank that fell behind is one whose log shows no watchdog line"
        last = self.last_lines[silent[0]]
        return (f"{waited}: rank{'s' if len(silent) > 1 else ''} {', '.join(map(str, silent))} logged no watchdog line: "
                f"fell behind" + (f" (rank {silent[0]}'s last line: {last})" if last else ""))
