"""The metrics pane's keys: ``5`` shows it (in the GPU pane's place; ``3`` brings the GPUs back),
``]`` the next metric, ``+`` overlays the attempt selected in the attempts pane (or takes it off).

:class:`MetricsKeys` extends :class:`~.keys.ViewKeys` (the app derives from it instead); only the
focus key of the two panes that share a place changes: each shows its pane first.
"""

from __future__ import annotations

from .keys import ViewKeys
from .panes.gpu import GpuPane
from .panes.history import HistoryPane
from .panes.metrics import MetricsPane

__all__ = ["MetricsKeys"]


class MetricsKeys(ViewKeys):
    def show_metrics(self, on: bool) -> None:
        """The metrics pane (``on``) or the GPU pane in their shared place."""
        gpu, metrics = self.query_one(GpuPane), self.query_one(MetricsPane)
        if bool(metrics.display) == on:
            return
        if self.screen.maximized is not None:
            self.screen.minimize()
        metrics.display, gpu.display = on, not on
        if on:
            metrics.tick(force=True)
        elif gpu._dirty:
            gpu.redraw()

    def action_focus_pane(self, name: str) -> None:
        if name == "metrics":
            self.show_metrics(True)
            if self.screen.maximized is not None:
                self.screen.minimize()
            self.query_one("#metrics-plot").focus()
            return
        if name == "gpu":
            self.show_metrics(False)
        super().action_focus_pane(name)

    def action_metric_next(self) -> None:
        self.show_metrics(True)
        name = self.query_one(MetricsPane).cycle_metric()
        if name is None:
            self.notify("no metric in the log yet", timeout=3, markup=False)

    def action_overlay(self) -> None:
        history = self.query_one(HistoryPane)
        attempt = history.selected()
        if attempt is None:
            self.notify("select an attempt in the attempts pane (4), then press + to overlay it", timeout=4, markup=False)
            return
        pane = self.query_one(MetricsPane)
        if attempt == pane.current():
            self.notify(f"#{attempt} is the attempt the metrics pane shows; select an earlier one to overlay", timeout=4, markup=False)
            return
        self.show_metrics(True)
        on = pane.toggle_overlay(attempt)
        has = pane.source.get(attempt)
        what = f"#{attempt} overlaid" if on else f"#{attempt} taken off the plot"
        if on and (has is None or not has.series):
            what += " (its log gave no metrics)"
        self.notify(what, timeout=3, markup=False)
