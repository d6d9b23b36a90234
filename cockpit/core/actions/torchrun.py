"""torchrun's own report of a failed worker: which rank, and the signal that killed it.

When a worker dies, torchrun (``torch.distributed.elastic``) logs ``failed (exitcode: -9)``, raises
its own ``ChildFailedError`` and prints a report whose root cause names the worker and how it ended::

    Root Cause (first observed failure):
    [0]:
      rank      : 0 (local_rank: 0)
      exitcode  : -9 (pid: 599)
      traceback : Signal 9 (SIGKILL) received by PID 599

The agent itself then exits 1.  A worker that raised has its own traceback earlier in the log
(the cause names it); one killed by a signal has none, and this report is the only place the
signal is said: read here from the log's last lines, so the death is "killed by signal 9
(SIGKILL)", never the agent's plain exit 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["WorkerSignal", "worker_signal"]

_ROOT = "Root Cause (first observed failure):"
_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")
_SIGNAL = re.compile(r"^\s*traceback\s*:\s*Signal (\d+) \((SIG[A-Z0-9]+)\) received by PID (\d+)")


@dataclass(frozen=True)
class WorkerSignal:
    """The worker torchrun's report says a signal killed."""

    signal: int
    name: str
    pid: int
    rank: int | None

    def describe(self) -> str:
        who = f"rank {self.rank}, pid {self.pid}" if self.rank is not None else f"pid {self.pid}"
        return f"torchrun's worker ({who}) was killed by signal {self.signal} ({self.name})"


def worker_signal(lines: Sequence[str]) -> WorkerSignal | None:
    """The root cause of torchrun's last report in ``lines`` (the log's last lines) when a signal
    ended that worker; None when there is no such report, or its worker raised."""
    starts = [i for i, line in enumerate(lines) if _ROOT in line]
    if not starts:
        return None
    rank: int | None = None
    for line in lines[starts[-1] + 1:]:
        if (m := _RANK.match(line)) and rank is None:
            rank = int(m.group(1))
        elif m := _SIGNAL.match(line):
            return WorkerSignal(int(m.group(1)), m.group(2), int(m.group(3)), rank)
        elif line.startswith("====="):
            break
    return None
