"""Several targets in the TUI: the target strip, its watch, and switching (``>`` / ``<``, palette).

Switching ends this app with :attr:`switch_to` set; :func:`cockpit.cli.tui.run_tui` starts the
app again on the chosen target's config.  Why restart rather than swap the engine in place: every
pane, the log follower, the attempt loop and the notifier are built around one engine, and a
fresh app is the one state that is certainly the new target's and none of the old (a running job
keeps running; its attempt stays in its target's journal).  The SSH connection is not shared
across the restart; the switch costs one handshake.
"""

from __future__ import annotations

from typing import Any

from ..core.targets_watch import TargetSummary, TargetsWatch
from .panes.targets import TargetStrip

__all__ = ["TargetSwitch"]


class TargetSwitch:
    """Mixin for the app: ``self.cfg``, ``self.engine`` are the selected target's."""

    cfg: Any
    engine: Any
    switch_to: str | None = None
    targets_watch: TargetsWatch | None = None

    def several_targets(self) -> bool:
        return len(self.cfg.targets) >= 2

    def target_strip(self) -> TargetStrip:
        return TargetStrip(self.cfg.target_names, self.cfg.selected or self.cfg.display_name, id="target-strip")

    def start_target_watch(self) -> None:
        if not self.several_targets():
            return
        strip = self.query_one(TargetStrip)  # type: ignore[attr-defined]

        def changed(summaries: list[TargetSummary]) -> None:
            self.call_later(strip.update_summaries, summaries)  # type: ignore[attr-defined]

        interval = max(15.0, float(self.cfg.ui.refresh_interval) * 10)
        self.targets_watch = TargetsWatch(self.cfg, self.cfg.selected, changed, interval=interval)
        self.run_worker(self.targets_watch.run(), name="targets-watch", group="targets", exit_on_error=False)  # type: ignore[attr-defined]

    def target_choices(self) -> list[str]:
        return [n for n in self.cfg.target_names if n != self.cfg.selected] if self.several_targets() else []

    def switch_target(self, name: str) -> None:
        cur = getattr(self.engine, "current_action", None)
        if cur:
            self.notify(f"{self.cfg.display_name} is busy: {cur} is running; switch when it is done",  # type: ignore[attr-defined]
                        severity="warning", timeout=5, markup=False)
            return
        self.switch_to = name
        self.exit(0)  # type: ignore[attr-defined]

    def _step_target(self, step: int) -> None:
        if not self.several_targets():
            self.notify("one target: list several as [[targets]] in the config to switch between them",  # type: ignore[attr-defined]
                        timeout=5, markup=False)
            return
        names = self.cfg.target_names
        i = names.index(self.cfg.selected) if self.cfg.selected in names else 0
        self.switch_target(names[(i + step) % len(names)])

    def action_next_target(self) -> None:
        self._step_target(1)

    def action_prev_target(self) -> None:
        self._step_target(-1)
