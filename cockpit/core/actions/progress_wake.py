"""Verify woken by the log, not by its tick, while it waits for the job's first progress.

Verify reads the job every tick (0.05 s, growing to 0.1 s in the first ten seconds, 0.5 s after):
the first progress line was seen half a tick after it was written on average, and every attempt
waited that long on top of the job's own start-up (a job that loads a model for a minute: a
quarter of a second).  While the log is quiet before the first progress, :class:`ProgressWake`
arms one ``tail -F`` from the reading's offset instead (:class:`~cockpit.core.probes.log_waker.LogWaker`:
a channel of its own, the bytes past the offset wake it at once) and verify reads again the moment
the log changes, or after :data:`ARMED_S` at the latest (a job that dies without a word is seen
then, as the tick would have seen it a little sooner).  While the log grows, or once progress was
seen, verify ticks as before: the settle window ends on its own clock.

A target where ``tail -F`` cannot run makes the waker ``unsupported``: verify ticks as before.  A
scheduler's job (its log on a shared file system, read where the scheduler runs) is never armed.
"""

from __future__ import annotations

import asyncio

from ..probes.log_waker import LogWaker
from .base import ActionContext
from .jobrecord import JobRecord

__all__ = ["ARMED_S", "ProgressWake"]

#: the longest wait while armed: a job that dies silently is read again this soon
ARMED_S = 0.5


class ProgressWake:
    """Waits between verify's readings: on the log's first change while it is quiet, else the tick."""

    def __init__(self, ctx: ActionContext, job: JobRecord) -> None:
        usable = bool(job.log_path) and not job.scheduler and ctx.transport.runtime.scheduler is None
        self.job = job
        self.waker = LogWaker(ctx.transport.stream) if usable else None
        self._last_offset: int | None = None
        #: how often a change of the log ended a wait (for the bench and the tests)
        self.woken = 0

    async def wait(self, tick: float, *, offset: int, waiting_for_progress: bool, alive: bool) -> None:
        """Sleep ``tick``; or, waiting for the first progress with the job alive and its log quiet
        since the last reading (``offset`` unchanged), until the log changes (:data:`ARMED_S` at most)."""
        quiet, self._last_offset = offset == self._last_offset, offset
        if self.waker is None or not self.waker.usable or not (waiting_for_progress and alive and quiet) or offset < 0:
            await asyncio.sleep(tick)
            return
        if await self.waker.wait(self.job.log_path, offset, max(tick, ARMED_S)) == "changed":
            self.woken += 1
