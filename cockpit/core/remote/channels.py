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

Nothing here can be left half-done by a cancellation: a slot is counted taken only after
:meth:`ChannelSlots.acquire`'s last wait (a caller cancelled while waiting takes none), and giving
one back (:meth:`~ChannelSlots.release`, :meth:`~ChannelSlots.refused`) never waits at all, so a
``finally`` that gives a slot back always does.  Whoever takes a slot gives it back on every path,
a cancelled one included (see ``SSHTransport._channel``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["ChannelSlots", "MAX_CHANNELS", "open_whole"]

T = TypeVar("T")

#: channels on one connection, the session's included (sshd's default MaxSessions is 10)
MAX_CHANNELS = 8


class ChannelSlots:
    """Slots for the channels beside the session's; ``limit`` goes down when sshd refuses one."""

    def __init__(self, limit: int = MAX_CHANNELS - 1) -> None:
        self.full = limit
        self._limit = limit
        self.in_use = 0
        #: the limit sshd taught us (None: no channel was refused on this connection)
        self.learned: int | None = None
        #: slots whose channel sshd granted (opened, not yet closed)
        self.open = 0
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def limit(self) -> int:
        return self._limit

    @limit.setter
    def limit(self, n: int) -> None:
        self._limit = n
        self._wake()  # a raised limit lets a waiter in; a lowered one is what wait_below waits for

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def _until(self, ready: Callable[[], bool]) -> None:
        while not ready():
            w = asyncio.get_running_loop().create_future()
            self._waiters.append(w)
            try:
                await w
            finally:
                if w in self._waiters:  # cancelled before a change woke it
                    self._waiters.remove(w)

    async def acquire(self) -> bool:
        """Wait for a free slot; False (at once) when sshd allows no channel beside the session.
        The slot is taken only once no wait is left: a caller cancelled while waiting holds none."""
        await self._until(lambda: self.limit <= 0 or self.in_use < self.limit)
        if self.limit <= 0:
            return False
        self.in_use += 1
        return True

    def release(self) -> None:
        """Give a slot back (never waits, so a ``finally`` cannot be cut short here)."""
        self.in_use -= 1
        self._wake()

    def refused(self) -> int:
        """sshd refused the channel of a slot this caller holds: give the slot back and lower the
        limit to the channels that are open besides it.  Returns the new limit (0: none allowed)."""
        self.in_use -= 1
        self.learned = max(0, min(self.limit, self.in_use))
        self.limit = self.learned
        return self.limit

    async def wait_below(self, n: int) -> None:
        """Return once the limit is under ``n`` (a refusal lowered it): a channel held for long
        (the host's shell, a stream) gives its slot back then."""
        await self._until(lambda: self.limit < n)

    def opened(self) -> None:
        """A channel opened, and with it every slot holds an open channel: sshd may allow more than
        learned (a refusal can come from a channel sshd had not yet freed), so offer one more slot;
        a refusal takes it back.  Slots still waiting for their channel's open do not count: sshd
        has granted those no channel yet (counted, a burst of opens under load raised the limit
        past what sshd allows, and each extra slot cost a refusal)."""
        self.open += 1
        if self.learned is not None and self.open >= self.limit and self.limit < self.full:
            self.limit += 1

    def closed(self) -> None:
        """A channel that :meth:`opened` is closed: its slot given back."""
        self.open = max(0, self.open - 1)
        self.release()

    def reset(self) -> None:
        """A new connection: sshd gets the benefit of the doubt again."""
        self.learned = None
        self.limit = self.full


async def open_whole(opening: Coroutine[Any, Any, T], abandoned: Callable[[T], object]) -> T:
    """Await ``opening`` (a channel's open) without cutting it short when the caller is cancelled:
    it goes on, and what it opens is handed to ``abandoned`` (to close it and give its slot back).
    Cut midway, an open leaves a channel sshd counts that nobody closes, and a refusal nobody
    learns from; ``opening`` gives its slot back itself when it fails."""
    task = asyncio.ensure_future(opening)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(lambda t: None if t.cancelled() or t.exception() is not None else abandoned(t.result()))
        raise
