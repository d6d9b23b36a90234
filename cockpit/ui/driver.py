"""The UI's side of the engine: calls the engine and its observer and turns results into messages.

Nothing here touches a widget.  The app runs these coroutines in *async* workers (asyncssh
objects belong to the app's event loop; a thread worker would give them another loop) and posts
what they return; its handlers update the panes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.message import Message

from .messages import (
    ActionRefused,
    GpuRefreshed,
    HistoryRefreshed,
    KmsgRefreshed,
    LogBatch,
    ProcsRefreshed,
    UserActionDone,
)

if TYPE_CHECKING:
    from ..core.face import EngineFace
    from ..core.journal import AttemptRecord
    from ..core.observe import Observer
    from ..core.probes.logs import LogEvent
    from ..core.probes.signatures import Match

__all__ = ["Driver", "Post"]

#: how a worker hands a message to the app (``App.post_message``)
Post = Callable[[Message], object]


class Driver:
    def __init__(self, engine: EngineFace, observer: Observer | None = None) -> None:
        self.engine = engine
        #: the engine's own observer (it follows each launch itself), unless a test gives another
        self.observer = observer if observer is not None else engine.observer
        self._history_sig: tuple[tuple[int, float | None, bool], ...] | None = None
        self._journal_ver: object = None
        self._records: list[AttemptRecord] | None = None

    # -- actions ----------------------------------------------------------------------------
    async def attempt(self, note: str, post: Post) -> None:
        """A manual attempt; its start, stages and verdict reach the screen as engine events."""
        from ..core.engine import Busy

        try:
            await self.engine.attempt(note)
        except Busy as e:
            post(ActionRefused("attempt", str(e)))

    async def adopt(self, pid: int, post: Post) -> None:
        """Adopt a running process as the job (:meth:`cockpit.core.engine.Engine.adopt`); its
        verdict reaches the screen as engine events."""
        from ..core.engine import Busy

        try:
            await self.engine.adopt(pid)
        except Busy as e:
            post(ActionRefused("adopt", str(e)))

    async def action(self, name: str, post: Post) -> None:
        """A single action; its start, stages and verdict reach the screen as engine events."""
        from ..core.engine import Busy

        try:
            await self.engine.run_action(name)
        except Busy as e:
            post(ActionRefused(name, str(e)))

    async def user_action(self, name: str, post: Post, confirmed: str | None = None) -> None:
        """One of the user's ``[[actions]]``; its result comes back as :class:`UserActionDone`."""
        from ..core.engine import Busy

        try:
            res = await self.engine.run_user_action(name, confirmed=confirmed)
        except Busy as e:
            post(ActionRefused(name, str(e)))
            return
        post(UserActionDone(res))

    # -- observation ------------------------------------------------------------------------
    async def procs(self) -> ProcsRefreshed:
        return ProcsRefreshed(await self.observer.refresh_procs())

    async def gpu(self) -> GpuRefreshed:
        return GpuRefreshed(await self.observer.refresh_gpu())

    async def kmsg(self) -> KmsgRefreshed:
        return KmsgRefreshed(await self.observer.refresh_kmsg())

    async def log(self, budget_s: float = 0.1) -> LogBatch | None:
        """New log lines: probes again while more bytes wait, for at most ``budget_s``."""
        obs = self.observer
        view = obs.log
        f = view.follower
        if f is None:
            return None
        lines: list[str] = []
        matches: list[Match] = []
        events: list[LogEvent] = []
        deadline = time.monotonic() + budget_s
        while True:
            upd = await obs.refresh_log()
            if upd is None:
                break
            lines.extend(upd.lines)
            matches.extend(upd.matches)
            events.extend(upd.events)
            if not upd.more or time.monotonic() > deadline:
                break
        first_no = f.ring.total - len(lines) + 1
        return LogBatch(view.path, first_no, lines, matches, events, view=obs.log)

    async def log_wait(self, timeout: float) -> tuple[str, LogBatch | None]:
        """While the log is quiet: wait for it to change without polling it (a remote ``tail -F``,
        :meth:`~cockpit.core.observe.Observer.wait_log`).  ``("quiet", batch)``: it stayed quiet
        for ``timeout`` s (a batch with no lines: the view is fresh as of now); ``("changed",
        None)``: poll it now; ``("poll", None)``: it cannot be waited for here (no log followed, no
        channel to spare, a tail without -F): poll it at the usual pace."""
        obs = self.observer
        f = obs.log.follower
        if f is None:
            return "poll", None
        state = await obs.wait_log(timeout)
        if state != "quiet":
            return state, None
        return state, LogBatch(obs.log.path, f.ring.total + 1, [], [], [], view=obs.log)

    def history(self, *, force: bool = False) -> HistoryRefreshed:
        """The journal's attempts (``changed`` is False when nothing changed since the last call).
        A journal that could not be written is tried again here first (each history refresh)."""
        journal = self.engine.journal
        fault = journal.fault
        if fault is not None:
            journal.flush()
            fault = journal.fault
        ver = journal.version()
        if not force and ver == self._journal_ver and self._records is not None:
            # nothing was written since: no need to fold every event of the journal again
            return HistoryRefreshed(self._records, collected_at=time.time(), changed=False, journal_fault=fault)
        self._journal_ver = ver
        records = self._records = journal.attempts()
        sig = tuple((r.attempt, r.last_event_at, r.open) for r in records)
        changed = force or sig != self._history_sig
        self._history_sig = sig
        return HistoryRefreshed(records, collected_at=time.time(), changed=changed, journal_fault=fault)

    def log_history(self) -> tuple[int, list[str]]:
        """Every line the observer still holds for the current log: (number of the first, lines)."""
        f = self.observer.log.follower
        if f is None:
            return 1, []
        return f.ring.first_line_no, f.ring.lines()

    def log_errors(self) -> list[Match]:
        """Every classified match the observer holds for the current log."""
        f = self.observer.log.follower
        if f is None:
            return []
        return list(f.classifier.matches)
