"""Several targets in the TUI: the target strip, its poll, and switching (``>`` / ``<``, palette).

Switching ends this app with :attr:`~cockpit.ui.app.CockpitApp.switch_to` set;
:func:`cockpit.cli.tui.run_tui` starts the app again on the chosen target's config.  Why restart
rather than swap the engine in place: every pane, the log follower, the attempt loop and the
notifier are built around one engine, and a fresh app is the one state that is certainly the new
target's and none of the old (a running job keeps running; its attempt stays in its target's
journal).  The SSH connection is not shared across the restart; the switch costs one handshake.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.targets_poll import TargetsPoll, TargetSummary
from .panes.targets import TargetStrip

if TYPE_CHECKING:
    from .host import CockpitHost

__all__ = ["Targets"]


class Targets:
    """The app's targets controller: ``app.cfg`` and ``app.engine`` are the selected target's."""

    def __init__(self, app: CockpitHost) -> None:
        self.app = app
        self.poll: TargetsPoll | None = None

    def several(self) -> bool:
        return len(self.app.cfg.targets) >= 2

    def strip(self) -> TargetStrip:
        cfg = self.app.cfg
        return TargetStrip(cfg.target_names, cfg.selected or cfg.display_name, id="target-strip")

    def start_poll(self) -> None:
        if not self.several():
            return
        app, cfg = self.app, self.app.cfg
        strip = app.query_one(TargetStrip)

        def changed(summaries: list[TargetSummary]) -> None:
            app.call_later(strip.update_summaries, summaries)

        interval = max(15.0, float(cfg.ui.refresh_interval) * 10)
        self.poll = TargetsPoll(cfg, cfg.selected or "", changed, interval=interval)
        app.run_worker(self.poll.run(), name="targets-watch", group="targets", exit_on_error=False)

    def choices(self) -> list[str]:
        cfg = self.app.cfg
        return [n for n in cfg.target_names if n != cfg.selected] if self.several() else []

    def switch(self, name: str) -> None:
        app = self.app
        cur = app.engine.current_action
        if cur:
            app.notify(f"{app.cfg.display_name} is busy: {cur} is running; switch when it is done",
                       severity="warning", timeout=5, markup=False)
            return
        app.switch_to = name
        app.exit(0)

    def _step(self, step: int) -> None:
        if not self.several():
            self.app.notify("one target: list several as [[targets]] in the config to switch between them", timeout=5, markup=False)
            return
        cfg = self.app.cfg
        names = cfg.target_names
        i = names.index(cfg.selected) if cfg.selected in names else 0
        self.switch(names[(i + step) % len(names)])

    def action_next_target(self) -> None:
        self._step(1)

    def action_prev_target(self) -> None:
        self._step(-1)
