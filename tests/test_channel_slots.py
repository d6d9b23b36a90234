"""ChannelSlots (cockpit.core.remote.channels) under cancellation: no path leaves a slot taken.

A slot is counted only once acquire() has nothing left to wait for, giving one back never waits
(so a cleanup that is itself cancelled still gives it), and every change of the limit wakes whoever
waits on it.  The lab half (channels really refused and granted by sshd while their caller goes) is
tests/test_channel_cancel_lab.py.
"""

from __future__ import annotations

import asyncio

from cockpit.core.remote.channels import ChannelSlots, open_whole
from tests.lab.util import await_for


async def test_an_acquire_cancelled_while_it_waits_takes_no_slot() -> None:
    s = ChannelSlots(1)
    assert await s.acquire()
    waiting = asyncio.ensure_future(s.acquire())
    await await_for(lambda: len(s._waiters) == 1, 5)
    waiting.cancel()
    s.release()  # the wake-up and the cancellation in the same turn: the cancelled one takes nothing
    await asyncio.gather(waiting, return_exceptions=True)
    assert waiting.cancelled() and s.in_use == 0 and s._waiters == []
    assert await asyncio.wait_for(s.acquire(), 5)  # the slot is there for the next one


async def test_giving_back_never_waits_so_a_cancelled_cleanup_still_does() -> None:
    s = ChannelSlots(2)
    assert await s.acquire() and await s.acquire()
    assert s.release() is None and s.in_use == 1  # done at once: no coroutine to be cut short
    assert s.refused() == 0 and s.in_use == 0 and s.learned == 0 and s.limit == 0
    assert await s.acquire() is False  # sshd allows none beside the session: said at once


async def test_a_refusal_wakes_what_waits_for_the_limit_to_fall() -> None:
    s = ChannelSlots(7)
    for _ in range(3):
        assert await s.acquire()
    below = asyncio.ensure_future(s.wait_below(2))  # the host's shell gives way under 2
    await await_for(lambda: len(s._waiters) == 1, 5)
    assert s.refused() == 2 and not below.done()
    assert s.refused() == 1
    await asyncio.wait_for(below, 5)


async def test_a_limit_raised_lets_a_waiter_in() -> None:
    """A new connection (``reset``) or fewer sessions on a shared one (``link.release``) raise the
    limit: a command waiting for a slot goes at once, not at the next release."""
    s = ChannelSlots(3)
    assert await s.acquire()
    s.refused()  # sshd allowed none beside the session's other channels: limit 0
    assert s.limit == 0
    s.limit = 1
    assert await s.acquire()
    waiting = asyncio.ensure_future(s.acquire())
    await await_for(lambda: len(s._waiters) == 1, 5)
    s.reset()
    assert await asyncio.wait_for(waiting, 5) and s.in_use == 2 and s.limit == 3 and s.learned is None


async def test_an_open_whose_caller_goes_is_finished_and_handed_over() -> None:
    """open_whole: the caller's cancellation does not cut the open; what it opens goes to ``abandoned``."""
    gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    started = asyncio.Event()
    handed: list[str] = []

    async def opening() -> str:
        started.set()
        return await gate  # sshd's answer

    caller = asyncio.ensure_future(open_whole(opening(), handed.append))
    await asyncio.wait_for(started.wait(), 5)
    caller.cancel()
    await asyncio.gather(caller, return_exceptions=True)
    assert caller.cancelled() and handed == [] and not gate.cancelled()  # the open goes on
    gate.set_result("channel")  # the answer comes after the caller went
    await await_for(lambda: handed == ["channel"], 5)


def test_only_granted_channels_raise_a_learned_limit() -> None:
    # a refusal taught 2; three slots acquired in a burst (the limit raised to 3 by a grant), two
    # channels granted while the third's open is still asked: sshd has granted 2, so no raise to 4
    s = ChannelSlots(limit=7)
    for _ in range(3):
        s.in_use += 1
    s.refused()
    assert (s.learned, s.limit, s.in_use) == (2, 2, 2)
    s.opened()  # one of the two open: slots still asked for do not count
    assert s.limit == 2
    s.opened()  # both granted with every slot taken: sshd may allow one more
    assert s.limit == 3
    s.in_use += 1  # the third slot, its open still asked for
    s.closed()
    s.opened()  # granted: two open again (one closed), three slots: no raise
    assert s.limit == 3 and s.open == 2
