"""Starting and stopping a :func:`watchfiles.awatch` task, shared by the source watcher and the
config/theme reloader.

:class:`FsWatch` runs one ``awatch`` over some paths in a task and hands each batch of raw events
to ``on_batch``.  :meth:`FsWatch.start` returns once the watches are in place (a save after that
is seen) and raises what went wrong when ``awatch`` failed at once (permission denied, inotify
limits).  :meth:`FsWatch.close` sets the stop event and gives the task ``grace`` seconds to end
before cancelling it; :func:`stop_task` does that last part for any task.

``step_ms`` is how often watchfiles' thread wakes to look at what inotify collected (and at the
stop event): a batch is handed over one to two steps after its last event.  watchfiles' own 50 ms
costs about 0.12 % of a core per watch while nothing happens, three watches a third of the TUI's
idle budget; each owner picks the slowest step its users do not feel (the source watcher 100 ms,
under the loop's debounce; the config and theme reloader 500 ms).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from watchfiles import Change

__all__ = ["FsWatch", "stop_task"]

log = logging.getLogger(__name__)

async def stop_task(task: asyncio.Task[None] | None, grace: float = 2.0) -> None:
    """Wait up to ``grace`` s for ``task`` to end on its own (it was asked to stop), then cancel it."""
    if task is None or task.done():
        return
    cancelled = False
    try:
        await asyncio.wait_for(asyncio.shield(task), grace)
    except asyncio.TimeoutError:
        pass  # it did not stop in time: cancelled below
    except asyncio.CancelledError:
        cancelled = True  # our own wait was cancelled: make sure the task goes, then end cancelled
    except Exception:  # broad: the task's own failure is not ours to raise while closing
        log.debug("watch task %s ended with an error while closing", task.get_name(), exc_info=True)
    if not task.done():
        task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    if cancelled:
        # never swallowed: a closing event loop cancels each task once, and a task that went on
        # after it would hold the loop's close forever
        raise asyncio.CancelledError


class FsWatch:
    """One ``watchfiles.awatch`` over ``paths`` in a task (see the module doc).

    ``on_batch(batch)`` is awaited for each batch of raw events (``{(Change, absolute path)}``); ``on_error(exc)`` is called (then the error
    is raised out of the task) when the watch dies of anything but cancellation.
    """

    def __init__(
        self,
        paths: Sequence[str],
        on_batch: Callable[[set[tuple[Change, str]]], Awaitable[None]],
        *,
        recursive: bool = True,
        force_polling: bool | None = None,
        name: str = "cockpit-fswatch",
        on_error: Callable[[BaseException], None] | None = None,
        step_ms: int = 50,
    ) -> None:
        self.paths = list(paths)
        self.on_batch = on_batch
        self.recursive = recursive
        self.force_polling = force_polling
        self.name = name
        self.on_error = on_error
        self.step_ms = step_ms
        self.stop_event = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.task is not None:
            return
        started = asyncio.Event()
        self.task = asyncio.create_task(self._read(started), name=self.name)
        await started.wait()
        # awatch creates its RustNotify (which adds the inotify watches synchronously) in the same
        # task step that set `started`, before its first await; one more turn lets that step finish.
        await asyncio.sleep(0)
        if self.task.done():
            self.task.result()  # raises what went wrong (e.g. permission denied)

    def stop(self) -> None:
        """Ask the watch to end (it does at its next wake-up); :meth:`close` also waits for it."""
        self.stop_event.set()

    async def close(self, grace: float = 2.0) -> None:
        self.stop()
        task, self.task = self.task, None
        await stop_task(task, grace)

    def error(self) -> BaseException | None:
        """What the watch task died of (None while it runs, or when it ended cleanly)."""
        t = self.task
        if t is None or not t.done() or t.cancelled():
            return None
        return t.exception()

    async def _read(self, started: asyncio.Event) -> None:
        from watchfiles import awatch

        started.set()
        try:
            async for batch in awatch(*self.paths, watch_filter=None, stop_event=self.stop_event, recursive=self.recursive, step=self.step_ms,
                                      force_polling=self.force_polling, ignore_permission_denied=True):
                await self.on_batch(batch)
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # reported to the owner, then raised out of the task
            if self.on_error is not None:
                self.on_error(e)
            raise
