"""The UI's side of the edit → attempt loop and of live reload: worker bodies, no widgets.

:class:`LoopRunner` owns a :class:`~cockpit.core.loop.SourceWatcher` (``watcher_for(cfg)``)
and an :class:`~cockpit.core.loop.AttemptLoop`; its hooks only *post* messages
(:class:`SourceChanged`, :class:`ActionStarted`, :class:`ActionFinished`, :class:`LoopNotice`).
Manual attempts go through :meth:`LoopRunner.attempt_now` so the watcher's idea of what is
deployed stays right.  On-save attempts never ask: they reuse the last hypothesis with a try
counter (:class:`~cockpit.core.loop.NoteCounter`).

:class:`Reloaders` watches the config file (:class:`~cockpit.core.reload.ConfigReloader`) and the
theme files (:class:`~cockpit.core.reload.FileReloader`) and posts what it found; the app's
handlers decide what can be applied without a restart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from .driver import Post
from .messages import (
    ActionFinished,
    ActionRefused,
    ConfigInvalid,
    ConfigReloaded,
    LoopNotice,
    SourceChanged,
    ThemeFileInvalid,
    ThemeFileReloaded,
)

if TYPE_CHECKING:
    from textual.theme import Theme

    from ..core.attempt import AttemptResult
    from ..core.config import Config, LoopConfig
    from ..core.face import EngineFace
    from ..core.loop import ChangeSet
    from ..core.reload import ConfigReloader, FileReloader

__all__ = ["LoopRunner", "Reloaders", "last_manifest"]


def last_manifest(engine: EngineFace) -> Mapping[str, str] | None:
    """What the newest attempt with a snapshot really deployed (relpath → sha256), else None."""
    from ..core.changes import deployed_manifest

    journal = engine.journal
    try:
        recs = journal.attempts()
        jdir = Path(journal.path).parent
        for r in reversed(recs[-20:]):
            man = deployed_manifest(jdir, r.attempt)
            if man:
                return man
    except (OSError, ValueError):  # an unreadable journal only costs the baseline: the current source counts
        return None
    return None


class LoopRunner:
    """The attempt loop as the TUI runs it (see the module doc)."""

    def __init__(self, engine: EngineFace, cfg: Config, post: Post, *, enabled: bool) -> None:
        from ..core.loop import AttemptLoop, NoteCounter, loop_config, watcher_for

        lc = loop_config(cfg)
        self.engine, self.cfg, self.post = engine, cfg, post
        self.watcher = watcher_for(cfg, baseline=last_manifest(engine))
        self.loop = AttemptLoop(
            engine, self.watcher, notes=NoteCounter(template=lc.note_template, journal=engine.journal),
            enabled=enabled, busy_retry=lc.busy_retry, busy_timeout=lc.busy_timeout,
            on_change=self._on_change, on_attempt_start=self._on_start, on_verdict=self._on_verdict,
            on_busy=self._on_busy, on_error=self._on_error,
        )
        #: True while the watcher runs (manual attempts then go through the loop)
        self.running = False
        self._t0: float | None = None
        self._busy_said = False

    # -- state ------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.loop.enabled

    def set_enabled(self, on: bool) -> None:
        self.loop.enabled = on

    def snapshot(self) -> SourceChanged:
        return SourceChanged(self.watcher.pending, on_save=self.loop.enabled, state=self.loop.state, queued=self.loop.queued)

    def apply(self, lc: LoopConfig) -> None:
        """New ``[loop]`` values that need no restart (debounce, busy waits, note template)."""
        self.watcher.debounce = float(lc.debounce)
        self.loop.busy_retry, self.loop.busy_timeout = lc.busy_retry, lc.busy_timeout
        self.loop.notes.template = lc.note_template

    def mark_deployed(self) -> None:
        """A manual deploy succeeded: the current source is what the target has."""
        self.watcher.mark_deployed()

    # -- worker bodies ----------------------------------------------------------------------
    async def run(self) -> None:
        try:
            await self.watcher.start()
        except (OSError, RuntimeError) as e:
            hint = " (set WATCHFILES_FORCE_POLLING=1 to poll instead)" if isinstance(e, OSError) else ""
            self.post(LoopNotice(f"cannot watch {self.watcher.source}: {e}{hint}", "error", "attempt on save"))
            return
        self.running = True
        try:
            self.post(self.snapshot())
            await self.loop.run()
        finally:
            self.running = False
            await self.watcher.close()

    async def attempt_now(self, note: str) -> None:
        """A manual attempt (the attempt key) through the loop."""
        from ..core.engine import Busy

        try:
            await self.loop.attempt_now(note)
        except Busy as e:
            self.post(ActionRefused("attempt", str(e)))
        finally:
            self.post(self.snapshot())
        if self.loop.queued and self.loop.enabled:
            self.loop.trigger()  # a save during the manual attempt: one more, as for on-save attempts

    # -- loop hooks: post only --------------------------------------------------------------
    def _on_change(self, cs: ChangeSet) -> None:
        self.post(self.snapshot())

    def _on_start(self, note: str, files: Mapping[str, str]) -> None:
        # the attempt's start, stages and verdict come from the engine (one path for every attempt)
        self._t0, self._busy_said = time.monotonic(), False
        self.post(self.snapshot())

    def _on_verdict(self, res: AttemptResult) -> None:
        self._t0 = None
        self.post(self.snapshot())

    def _on_busy(self, e: BaseException, waited: float) -> None:
        if not self._busy_said:
            self._busy_said = True
            self.post(LoopNotice(f"{e}: waiting, retrying every {self.loop.busy_retry:g}s for up to {self.loop.busy_timeout:g}s",
                                 "warning", "attempt waits"))
        self.post(self.snapshot())

    def _on_error(self, e: BaseException) -> None:
        if self._t0 is not None:  # the attempt in flight ended without a verdict
            self._t0 = None
            self.post(ActionFinished("attempt", None, error=f"{type(e).__name__}: {e}"))
        else:
            self.post(LoopNotice(f"attempt loop: {type(e).__name__}: {e}", "error", "attempt on save"))
        self.post(self.snapshot())


class Reloaders:
    """Live reload of the config file and the theme files (posts messages only)."""

    def __init__(self, cfg: Config, theme_files: list[str], post: Post) -> None:
        from ..core.reload import ConfigReloader, FileReloader
        from .themes import ThemeError, load_theme_file

        self.post = post
        #: True once every reloader watches its files (a save after that is seen)
        self.ready = False
        self.config: ConfigReloader | None = None
        if cfg.path is not None:
            self.config = ConfigReloader(cfg.path, lambda c: post(ConfigReloaded(c)), lambda e: post(ConfigInvalid(e)),
                                         current=cfg)
        files = [f for f in theme_files if Path(f).is_file()]
        self.themes: FileReloader | None = None
        if files:
            def reloaded(p: Path, t: Theme) -> None:
                post(ThemeFileReloaded(str(p), t))

            self.themes = FileReloader(files, load_theme_file, reloaded,
                                       lambda p, e: post(ThemeFileInvalid(str(p), e)), errors=(ThemeError,), parse_now=False)

    async def run(self) -> None:
        started: list[ConfigReloader | FileReloader] = []
        try:
            for r in (self.config, self.themes):
                if r is None:
                    continue
                try:
                    await r.start()
                    started.append(r)
                except (OSError, RuntimeError) as e:
                    self.post(LoopNotice(f"live reload is off for {', '.join(map(str, r.paths))}: {e}", "warning", "live reload"))
            self.ready = True
            if started:
                await asyncio.Event().wait()  # until the worker is cancelled
        finally:
            self.ready = False
            for r in started:
                await r.close()
