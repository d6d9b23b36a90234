"""The UI's side of the engine: calls the engine and its observer and turns results into messages.

Nothing here touches a widget.  The app runs these coroutines in *async* workers (asyncssh
objects belong to the app's event loop; a thread worker would give them another loop) and posts
what they return; its handlers update the panes.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ..core.layers import Stage
from .messages import (
    ActionFinished,
    ActionRefused,
    ActionStarted,
    GpuRefreshed,
    HistoryRefreshed,
    KmsgRefreshed,
    LogBatch,
    ProcsRefreshed,
    StageEvent,
)

__all__ = ["Driver", "make_observer"]

Post = Callable[[Any], Any]


def make_observer(engine: Any) -> Any:
    """The engine's own observer when it has one (it then follows each launch itself), else a new
    one on the engine's transport."""
    obs = getattr(engine, "observer", None)
    if obs is not None:
        return obs
    from ..core.observe import Observer

    return Observer(engine.cfg, engine.transport)


class Driver:
    def __init__(self, engine: Any, observer: Any | None = None) -> None:
        self.engine = engine
        self.observer = observer if observer is not None else make_observer(engine)
        self._history_sig: tuple[Any, ...] | None = None
        self.follow_job(getattr(engine, "job", None))

    # -- the job the observer follows ---------------------------------------------------------
    def follow_job(self, job: Any) -> None:
        """Point the observer at ``job`` (a JobRecord or its dict) unless it already follows it."""
        if job is None:
            return
        get = job.get if isinstance(job, dict) else (lambda k: getattr(job, k, None))
        pid, pgid, log_path = get("pid"), get("pgid"), get("log_path")
        obs = self.observer
        if log_path and getattr(obs.log, "path", None) == log_path and pid in getattr(obs, "job_pids", set()):
            return
        set_job = getattr(obs, "set_job", None)
        if set_job is not None:
            set_job(pid, pgid, log_path)

    def stage_listener(self, post: Post) -> Callable[[str, Stage], None]:
        """The engine listener: called inside the engine's coroutine, so it only posts."""

        def on_stage(action: str, stage: Stage) -> None:
            post(StageEvent(action, stage))

        return on_stage

    # -- actions ----------------------------------------------------------------------------
    async def attempt(self, note: str, post: Post) -> None:
        from ..core.engine import Busy

        t0 = time.monotonic()
        post(ActionStarted("attempt", note))
        try:
            res = await self.engine.attempt(note)
        except Busy as e:
            post(ActionRefused("attempt", str(e)))
            return
        self.follow_job(res.job)
        post(ActionFinished("attempt", res.verdict, outcome=res.outcome.value, attempt=res.attempt,
                            first_error=res.first_error, duration_s=time.monotonic() - t0))

    async def action(self, name: str, post: Post) -> None:
        from ..core.engine import Busy

        t0 = time.monotonic()
        post(ActionStarted(name))
        try:
            verdict = await self.engine.run_action(name)
        except Busy as e:
            post(ActionRefused(name, str(e)))
            return
        if name in ("launch", "relaunch"):
            self.follow_job(getattr(self.engine, "job", None))
        post(ActionFinished(name, verdict, duration_s=time.monotonic() - t0))

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
        matches: list[Any] = []
        events: list[Any] = []
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

    def history(self, *, force: bool = False) -> HistoryRefreshed:
        """The journal's attempts (``changed`` is False when nothing changed since the last call)."""
        records = self.engine.journal.attempts()
        sig = tuple((r.attempt, r.last_event_at, r.open) for r in records)
        changed = force or sig != self._history_sig
        self._history_sig = sig
        return HistoryRefreshed(records, collected_at=time.time(), changed=changed)

    def log_history(self) -> tuple[int, list[str]]:
        """Every line the observer still holds for the current log: (number of the first, lines)."""
        f = self.observer.log.follower
        if f is None:
            return 1, []
        return f.ring.first_line_no, f.ring.lines()

    def log_errors(self) -> list[Any]:
        """Every classified match the observer holds for the current log."""
        f = self.observer.log.follower
        if f is None:
            return []
        return list(getattr(f.classifier, "matches", []))
