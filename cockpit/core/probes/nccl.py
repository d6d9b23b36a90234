"""PyTorch's NCCL watchdog lines: which rank fell behind in a distributed hang.

When a collective times out, each rank's watchdog logs (torchrun prefixes every line with
``[rankN]:``)::

    [rank3]:[E… ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 3] Exception (either an
    error or timeout) detected by watchdog at work: 1532, last enqueued NCCL work: 1532, last
    completed NCCL work: 1531.

(older releases: ``[Rank 3] Timeout at NCCL work: 1532, last enqueued NCCL work: 1532, last
completed NCCL work: 1531.``).  The rank whose *last enqueued* work is lowest never reached the
collective the others wait in: that is the one that fell behind (stuck before it, or dead).
:class:`NcclWatch` collects these per rank and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["NcclWatch", "RankWork"]

_WORK = re.compile(
    r"Rank (?P<rank>\d+)\][^\n]*?(?:detected by watchdog at work|Timeout at NCCL work): (?P<seq>\d+), "
    r"last enqueued NCCL work: (?P<enq>-?\d+), last completed NCCL work: (?P<done>-?\d+)")


@dataclass(frozen=True)
class RankWork:
    rank: int
    timed_out_at: int
    last_enqueued: int
    last_completed: int


@dataclass
class NcclWatch:
    ranks: dict[int, RankWork] = field(default_factory=dict)

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
        return (f"rank{'s' if len(works) > 1 else ''} {seen} timed out waiting in NCCL work {high.timed_out_at} "
                f"(last completed {low.last_completed}): the rank that fell behind is one whose log shows no watchdog line")
