"""A task cancelled while it waits for another task to end ends cancelled itself.

A closing event loop (``asyncio.run``, Textual's ``App.run``) cancels each task once and waits for
them all: a task that swallowed that one cancellation and went on would hold the close forever.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, cast

from cockpit.core.fate import FateFollower
from cockpit.core.fswatch import stop_task


async def _slow_to_end(cleaning: asyncio.Event, release: asyncio.Event) -> None:
    """Runs until cancelled, then takes until ``release`` to clean up."""
    try:
        await asyncio.Event().wait()
    finally:
        cleaning.set()
        await release.wait()


async def _cancel_midway(waiter: asyncio.Task[None], cleaning: asyncio.Event, release: asyncio.Event) -> None:
    await asyncio.wait_for(cleaning.wait(), 5)
    waiter.cancel()
    await asyncio.sleep(0)  # the waiter's cancellation reaches the task it waits on
    release.set()
    await asyncio.wait_for(asyncio.gather(waiter, return_exceptions=True), 5)


async def test_a_cancelled_caller_of_a_fate_followers_cancel_ends_cancelled() -> None:
    cleaning, release = asyncio.Event(), asyncio.Event()
    fol = FateFollower(cast(Any, None), 1, cast(Any, None), cast(Any, object()), lambda a, f: None, interval=1.0)
    inner = fol.task = asyncio.create_task(_slow_to_end(cleaning, release))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(fol.cancel())
    await _cancel_midway(waiter, cleaning, release)
    assert waiter.cancelled() and inner.done() and fol.task is None


async def test_a_cancelled_caller_of_stop_task_ends_cancelled_and_the_task_goes() -> None:
    cleaning, release = asyncio.Event(), asyncio.Event()
    inner = asyncio.create_task(_slow_to_end(cleaning, release))
    await asyncio.sleep(0)

    async def close() -> None:
        await stop_task(inner, grace=30)

    waiter = asyncio.create_task(close())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    waiter.cancel()  # while it gives the task its grace: the task is then cancelled, and so is the waiter
    await asyncio.wait_for(cleaning.wait(), 5)
    release.set()
    await asyncio.wait_for(asyncio.gather(waiter, return_exceptions=True), 5)
    assert waiter.cancelled() and inner.done()


def test_a_loop_closes_with_a_task_cancelled_while_it_stops_a_follower() -> None:
    """The shape of the teardown: asyncio.run's close cancels a task that is stopping a follower;
    the close ends (before the fix it waited on the task's next await forever)."""
    reached = []

    async def main() -> None:
        fol = FateFollower(cast(Any, None), 1, cast(Any, None), cast(Any, object()), lambda a, f: None, interval=1.0)
        cleaning, release = asyncio.Event(), asyncio.Event()
        fol.task = asyncio.create_task(_slow_to_end(cleaning, release))

        async def closer() -> None:
            await fol.cancel()
            reached.append("after cancel")
            await asyncio.Event().wait()  # what a swallowed cancellation would reach: never ends

        asyncio.get_running_loop().create_task(closer())
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        asyncio.get_running_loop().call_soon(release.set)
        # main returns: asyncio.run cancels closer while it waits in fol.cancel()

    t = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the loop's close hung on a task that swallowed its cancellation"
    assert reached == []
