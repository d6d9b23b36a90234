"""The target's process table as an action reads it: every process (:func:`ps_table`) and PID 1.

These read the target through an action's context, so they stand on :mod:`.base`; the job's
record and the pure helpers beside it (:mod:`.jobrecord`) stay below the context, which names the
record.
"""

from __future__ import annotations

from ..procstat import read_stat
from .base import ActionContext
from .jobrecord import KNOWN_REAPERS

__all__ = ["ps_table", "pid1", "pid1_reaps"]


async def pid1(ctx: ActionContext) -> str:
    """The name of the target's PID 1 (``/proc/1/comm``)."""
    res = await ctx.run("cat /proc/1/comm", timeout=5)
    return res.text.strip()


async def ps_table(ctx: ActionContext) -> list[tuple[int, int, int, str, str]]:
    """(pid, ppid, pgid, stat, comm) of every process in the target, from /proc (no procps needed)."""
    res = await ctx.run("cat /proc/[0-9]*/stat 2>/dev/null", timeout=10)
    out = []
    for line in res.text.splitlines():
        st = read_stat(line)
        if st is not None:
            out.append((st.pid, st.ppid, st.pgid, st.state, st.comm))
    return out


async def pid1_reaps(ctx: ActionContext) -> tuple[str, bool]:
    name = await pid1(ctx)
    return name, name in KNOWN_REAPERS
