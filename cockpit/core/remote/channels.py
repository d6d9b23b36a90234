"""How many SSH channels cockpit opens at once on one connection, and what it learns from sshd.

sshd's ``MaxSessions`` (10 by default, sometimes 1 or 2 on hardened hosts) caps the channels one
connection may have open.  The persistent session holds one; host commands, uploads and streams
share the others through :class:`ChannelSlots`: at most ``MAX_CHANNELS - 1`` at once.  When sshd
refuses a channel anyway, cockpit does not hammer it or fail everything waiting: it lowers its own
limit to the number sshd did accept (``learned``) and the refused command waits for a free slot;
each channel that opens with every slot taken offers one slot more (a refusal can also come from a
channel sshd has not freed yet, so a limit learned too low grows back).  Only when sshd accepts no
channel beside the session (tried a few times) does a command fail, in the ``ssh`` layer, with the
fix (raise ``MaxSessions``).  A new connection starts with the full limit again.
"""

from __future__ import annotations

import asyncio

__all__ = ["ChannelSlots", "MAX_CHANNELS"]

#: channels on one connection, the session's included (sshd's default MaxSessions is 10)
MAX_CHANNELS = 8


class ChannelSlots:
    """Slots for the channels beside the session's; ``limit`` goes down when sshd refuses one."""

    def __init__(self, limit: int = MAX_CHANNELS - 1) -> None:
        self.full = limit
        self.limit = limit
        self.in_use = 0
        #: the limit sshd taught us (None: no channel was refused on this connection)
        self.learned: int | None = None
        self._cond = asyncio.Condition()

    async def acquire(self) -> bool:
        """Wait for a free slot; False (at once) when sshd allows no channel beside the session."""
        async with self._cond:
            await self._cond.wait_for(lambda: self.limit <= 0 or self.in_use < self.limit)
            if self.limit <= 0:
                return False
            self.in_use += 1
            return True

    async def release(self) -> None:
        async with self._cond:
            self.in_use -= 1
            self._cond.notify_all()

    async def refused(self) -> int:
        """sshd refused the channel of a slot this caller holds: give the slot back and lower the
        limit to the channels that are open besides it.  Returns the new limit (0: none allowed)."""
        async with self._cond:
            self.in_use -= 1
            self.limit = max(0, min(self.limit, self.in_use))
            self.learned = self.limit
            self._cond.notify_all()
            return self.limit

    async def wait_below(self, n: int) -> None:
        """Return once the limit is under ``n`` (a refusal lowered it): a channel held for long
        (the host's shell) gives its slot back then."""
        async with self._cond:
            await self._cond.wait_for(lambda: self.limit < n)

    def opened(self) -> None:
        """A channel opened with every slot taken: sshd may allow more than learned (a refusal can
        come from a channel sshd had not yet freed), so offer one more slot; a refusal takes it back."""
        if self.learned is not None and self.in_use >= self.limit and self.limit < self.full:
            self.limit += 1

    def reset(self) -> None:
        """A new connection: sshd gets the benefit of the doubt again."""
        self.limit, self.learned = self.full, None
