"""What the panes show comes from polls: :class:`Polling`, the app's ``polling`` controller.

Each observed part is polled by one async worker (group ``poll``) that waits for its previous
refresh to finish before sleeping, so polls never overlap; the pace is adaptive (:mod:`.pacing`).
The workers only *post* messages (:mod:`.driver` makes them); the app's handlers touch the panes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from textual.message import Message
from textual.worker import Worker

from .guard import while_mounted
from .messages import GpuRefreshed, LogBatch, ProcsRefreshed
from .pacing import Pacer, signature

if TYPE_CHECKING:
    from .host import CockpitHost

log = logging.getLogger(__name__)

__all__ = ["Polling"]


class Polling:
    def __init__(self, app: CockpitHost) -> None:
        self.app = app

    def start(self) -> None:
        app, ui = self.app, self.app.cfg.ui
        driver = app.driver
        self._poll("procs", driver.procs, lambda: ui.refresh_interval)
        self._poll("gpu", driver.gpu, lambda: ui.refresh_interval)
        self._poll("log", driver.log, lambda: ui.refresh_interval)
        if app.engine.transport.runtime.reads_host_kmsg:  # the host's kernel log (pct): the container shares its kernel
            self._poll("kmsg", driver.kmsg, lambda: max(10.0, ui.refresh_interval * 5))
        app.run_worker(self._history_loop(), group="poll", exit_on_error=False, name="poll-history")

    def _poll(self, part: str, fetch: Callable[[], Awaitable[Message | None]], interval: Callable[[], float]) -> Worker[None]:
        # adaptive refresh (ui/pacing.py): calm parts back off, a slow link is not probed back to
        # back, an action speeds everything up
        app = self.app
        pacer = Pacer(interval, busy=lambda: app.status_state.action is not None)

        async def loop() -> None:
            failures = 0
            while True:
                t0 = time.monotonic()
                msg: Message | None
                try:
                    msg = await fetch()
                    failures = 0
                except Exception as e:  # noqa: BLE001 - a bug in a probe must not end the polling; notified (first of a run), debug-logged
                    log.debug("%s refresh crashed", part, exc_info=True)
                    failures += 1
                    if failures == 1:
                        app.notify(f"{part} refresh crashed: {e!r}", severity="error", timeout=8, markup=False)
                    msg = None
                if msg is not None:
                    app.post_message(msg)
                if part == "log":
                    await self._log_pause(pacer, msg if isinstance(msg, LogBatch) else None, failures)
                    continue
                if msg is not None:
                    pacer.observe(signature(msg))
                await asyncio.sleep(pacer.wait(time.monotonic() - t0, failures))

        return app.run_worker(loop(), name=f"poll-{part}", group="poll", exit_on_error=False)

    async def _log_pause(self, pacer: Pacer, msg: LogBatch | None, failures: int) -> None:
        """Between two log polls: 0.1 s while lines flow; half a second for a while after; then, on
        a quiet log, a remote ``tail -F`` that returns when it changes or after 10 s (a quiet
        stretch is posted as a fresh view): one poll per 10 s instead of two per second."""
        if failures:
            await asyncio.sleep(pacer.wait(failures=failures))
            return
        period = pacer.period()
        wait = pacer.log_wait(msg is not None and bool(msg.lines))
        if wait < period:
            await asyncio.sleep(wait)
            return
        # one wait, then one poll (which also catches what a wait cannot: a truncated file)
        state, quiet = await self.app.driver.log_wait(max(10.0, period * 2.5))
        if quiet is not None:
            self.app.post_message(quiet)  # watched and unchanged: fresh
        elif state != "changed":  # it cannot be waited for here: poll at the usual pace
            await asyncio.sleep(wait)

    async def _history_loop(self) -> None:
        while True:
            self.app.post_message(self.app.driver.history())
            await asyncio.sleep(self.app.cfg.ui.refresh_interval)

    @while_mounted
    def load_history(self) -> None:
        self.app.post_message(self.app.driver.history(force=True))

    def refresh_now(self) -> Worker[None]:
        """One refresh of everything (key ``u``; tests)."""
        return self.app.run_worker(self._refresh_all(), group="refresh", exclusive=True, exit_on_error=False, name="refresh-now")

    async def _refresh_all(self) -> None:
        driver = self.app.driver
        fetches: tuple[Callable[[], Awaitable[Message | None]], ...] = (driver.procs, driver.gpu, driver.log)
        for fetch in fetches:
            msg = await fetch()
            if msg is not None:
                self.app.post_message(msg)
        self.app.post_message(driver.history(force=True))

    def show_current(self) -> None:
        """Render whatever the observer already holds (before the first refresh)."""
        app = self.app
        obs = app.driver.observer
        if obs.procs.collected_at is not None:
            app.post_message(ProcsRefreshed(obs.procs))
        if obs.gpu.collected_at is not None or obs.gpu.snapshot is not None:
            app.post_message(GpuRefreshed(obs.gpu))
        f = obs.log.follower
        if f is not None and len(f.ring):
            first, lines = app.driver.log_history()
            app.post_message(LogBatch(obs.log.path, first, lines, app.driver.log_errors(), view=obs.log))
