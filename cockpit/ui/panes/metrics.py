"""Metrics: the selected metric against step for the current attempt, earlier attempts overlaid.

Drawn with ``textual-plotext``.  The current attempt is the one whose job cockpit follows (else the
latest with metrics); by default the previous attempt with metrics is overlaid, and once you pick
overlays (``+`` on a row of the attempts pane) exactly those are.  Each series has a colour from
the theme (``series-1`` … ``series-5`` in a theme's ``[variables]``; the Okabe–Ito palette
otherwise, safe for colour-blind viewers) *and* its attempt number in the legend above the plot;
the current attempt is drawn as a line (braille), the others as dots on top of it, so colour is
never the only signal.  The
subtitle says the steps per second and the ETA when the total is known.  With no metric yet the
pane says which lines it looks for.

It shares the GPU pane's place (``5`` shows it, ``3`` the GPUs) and zooms like every pane.  It
reads the engine's metrics store (memory, or a small file per attempt) once a second, and draws
again only when a series changed; a series is thinned to a few points per column first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich.color import Color as RichColor
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.color import Color, ColorParseError
from textual.widgets import Static
from textual_plotext import PlotextPlot

from ...core.metrics.report import fmt_rate, fmt_value, primary
from ..format import fmt_age
from ..shown import shown
from .base import Pane

if TYPE_CHECKING:
    from ...core.face import EngineFace
    from ...core.metrics import AttemptMetrics, MetricsStore

__all__ = ["MetricsPane", "MetricsPlot", "EngineMetrics", "OKABE_ITO", "thin"]

#: Okabe & Ito's colour-blind-safe palette (yellow left out: it vanishes on a light background)
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#D55E00")
#: the current attempt is a line; earlier ones are dots
MARKERS = ("braille", "dot")
#: no new step for this long: the subtitle says when the last one came instead of an ETA
QUIET_S = 30.0

FORMS = ("step 120 loss 1.83 lr 3e-4", "step=120 | loss=1.83", "{'loss': 1.83, 'epoch': 0.12}  (HF Trainer)",
         "12%|█▏  | 120/1000 [00:30<03:40, 4.00it/s]  (tqdm, Lightning)")


class EngineMetrics:
    """What the pane reads, from the engine: the current attempt and each attempt's metrics."""

    def __init__(self, engine: EngineFace) -> None:
        self.engine = engine

    @property
    def store(self) -> MetricsStore:
        return self.engine.metrics

    def current(self) -> int | None:
        cur = self.engine.job_attempt
        if cur is not None:
            return cur
        ids = self.store.attempts()
        return ids[-1] if ids else None

    def get(self, attempt: int) -> AttemptMetrics | None:
        return self.store.get(attempt)

    def attempts(self) -> list[int]:
        return self.store.attempts()

    @property
    def total_steps(self) -> int:
        return self.store.total_steps

    @property
    def pattern(self) -> str:
        return self.engine.cfg.metrics.pattern


def thin(xs: Sequence[float], ys: Sequence[float], buckets: int) -> tuple[list[float], list[float]]:
    """At most about ``2 × buckets`` points: each bucket of x keeps its lowest and highest point
    (in order), so spikes and the envelope survive; the first and last points always stay."""
    n = len(xs)
    if n <= 2 * buckets or buckets < 1:
        return list(xs), list(ys)
    x0, x1 = xs[0], xs[-1]
    width = (x1 - x0) / buckets or 1.0
    out_x, out_y = [xs[0]], [ys[0]]
    i = 1
    while i < n - 1:
        b = int((xs[i] - x0) / width)
        j = i
        lo = hi = i
        while j < n - 1 and int((xs[j] - x0) / width) == b:
            if ys[j] < ys[lo]:
                lo = j
            if ys[j] > ys[hi]:
                hi = j
            j += 1
        for k in sorted({lo, hi}):
            out_x.append(xs[k])
            out_y.append(ys[k])
        i = j
    out_x.append(xs[-1])
    out_y.append(ys[-1])
    return out_x, out_y


class MetricsPlot(PlotextPlot):
    """A plotext plot that builds its frame only when its data, size or theme changed."""

    can_focus = True

    def __init__(self, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(**kw)
        self.data_version = 0
        self._key: tuple[object, ...] | None = None
        self._frame: RenderResult = Text()

    def render(self) -> RenderResult:
        key = (self.size.width, self.size.height, self.data_version, self.app.theme)
        if key != self._key:
            self._frame = super().render()
            self._key = key
        return self._frame


class MetricsPane(Pane):
    pane_id = "metrics"
    pane_title = "metrics [5]"

    # hidden until 5 shows it in the GPU pane's place (the panes' look, as in styles.tcss)
    DEFAULT_CSS = """
    MetricsPane {
        display: none;
        border: round $foreground 30%;
        border-title-color: $text;
        border-subtitle-color: $text-muted;
        height: 1fr;
    }
    MetricsPane:focus-within {
        border: round $border;
        border-title-style: bold;
    }
    #metrics-empty {
        height: 1fr;
        padding: 0 1;
        background: $surface;
    }
    #metrics-plot {
        height: 1fr;
    }
    #metrics-legend {
        height: 1;
        padding: 0 1;
        background: $surface;
    }
    """

    def __init__(self, clock: Callable[[], float], interval: float, source: EngineMetrics, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(**kw)
        self.clock, self.interval, self.source = clock, interval, source
        #: the overlays the user picked (None: the previous attempt with metrics)
        self.picked: list[int] | None = None
        #: the metric shown (None: the loss, or the first)
        self.metric: str | None = None
        self.shown: list[int] = []
        self._sig: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="metrics-empty", markup=False)
        yield Static("", id="metrics-legend", markup=False)
        yield MetricsPlot(id="metrics-plot")

    def on_mount(self) -> None:
        self.set_interval(1.0, self.tick)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.retheme())
        self.tick()

    # -- what is shown ---------------------------------------------------------------------------
    def current(self) -> int | None:
        return self.source.current()

    def overlays(self, current: int | None) -> list[int]:
        if self.picked is not None:
            return [a for a in self.picked if a != current]
        earlier = [a for a in self.source.attempts() if current is None or a < current]
        for a in reversed(earlier):
            m = self.source.get(a)
            if m is not None and m.series:
                return [a]
        return []

    def names(self, data: dict[int, AttemptMetrics | None]) -> list[str]:
        """Every metric shown: the current attempt's first, in its order, then the overlays' others."""
        cur = self.current()
        names: list[str] = []
        for _, m in sorted(data.items(), key=lambda kv: kv[0] != cur):
            if m is not None:
                names += [n for n in m.names() if n not in names]
        return names

    def chosen(self, data: dict[int, AttemptMetrics | None]) -> str | None:
        names = self.names(data)
        if self.metric in names:
            return self.metric
        return primary(names)

    def cycle_metric(self) -> str | None:
        """The next metric (in the order the current attempt logs them); its name."""
        data = self._data()
        names = self.names(data)
        if not names:
            return None
        cur = self.chosen(data)
        self.metric = names[(names.index(cur) + 1) % len(names)] if cur in names else names[0]
        self.tick(force=True)
        return self.metric

    def toggle_overlay(self, attempt: int) -> bool:
        """Overlay ``attempt`` (True), or take it off (False)."""
        cur = self.current()
        picked = list(self.picked if self.picked is not None else self.overlays(cur))
        on = attempt not in picked
        picked = picked + [attempt] if on else [a for a in picked if a != attempt]
        self.picked = picked
        self.tick(force=True)
        return on

    def _data(self) -> dict[int, AttemptMetrics | None]:
        cur = self.current()
        ids = self.overlays(cur) + ([cur] if cur is not None else [])
        return {a: self.source.get(a) for a in ids}

    # -- drawing ---------------------------------------------------------------------------------
    def tick(self, force: bool = False) -> None:
        if not self.is_mounted:
            return
        data = self._data()
        sig = (tuple((a, id(m), m.version if m is not None else 0) for a, m in data.items()), self.metric, self.picked is None)
        if sig != self._sig or force:
            self._sig = sig
            self._dirty = True
        if self._dirty and self.display and not self.hidden_by_zoom:
            self.redraw(data)
        self._subtitle(data)

    def redraw(self, data: dict[int, AttemptMetrics | None] | None = None) -> None:
        self._dirty = False
        data = self._data() if data is None else data
        cur = self.current()
        metric = self.chosen(data)
        plot = self.query_one(MetricsPlot)
        empty = self.query_one("#metrics-empty", Static)
        self.border_title = Text(f"{self.pane_title} · {shown(metric)}" if metric else self.pane_title)  # data, never markup
        series = [(a, m.series[metric]) for a, m in data.items() if metric and m is not None and metric in m.series]
        self.shown = [a for a, _ in series]
        if not series:
            empty.update(self.empty_text(cur))
            empty.display, plot.display = True, False
            self.query_one("#metrics-legend", Static).display = False
            return
        self.query_one("#metrics-legend", Static).display = True
        empty.display, plot.display = False, True
        plt = plot.plt
        plt.clear_data()
        plt.xlabel("step")
        width = max(10, plot.size.width or 60)
        legend = Text(no_wrap=True, overflow="ellipsis")
        # the current attempt first (a line), the overlays on top of it (dots: they are the marks to compare with)
        ordered = sorted(series, key=lambda p: (p[0] != cur, p[0]))
        overlay = 0
        for a, s in ordered:
            xs, ys = thin(s.xs, s.ys, width)
            mine = a == cur
            rgb = self.colour(0 if mine else 1 + overlay % 4)
            overlay += 0 if mine else 1
            plt.plot(xs, ys, color=rgb, marker=MARKERS[0 if mine else 1])
            legend.append(("━━" if mine else "••") + f" #{a}", style=Style(color=RichColor.from_rgb(*rgb), bold=mine))
            legend.append(f"{' now' if mine and len(series) > 1 else ''}  ")
        lo, hi = min(s.xs[0] for _, s in series), max(s.xs[-1] for _, s in series)
        ticks: list[float] = sorted({round(lo + (hi - lo) * k / 4) for k in range(5)}) if hi > lo else [lo]
        plt.xticks(ticks, [fmt_value(t) for t in ticks])
        self.query_one("#metrics-legend", Static).update(legend)
        plot.data_version += 1
        plot.refresh()

    def colour(self, i: int) -> tuple[int, int, int]:
        """Series colour ``i`` from the theme (``series-N``), else Okabe–Ito."""
        text = self.app.theme_variables.get(f"series-{i + 1}") or OKABE_ITO[i % len(OKABE_ITO)]
        try:
            return Color.parse(text).rgb
        except ColorParseError:
            return Color.parse(OKABE_ITO[i % len(OKABE_ITO)]).rgb

    def empty_text(self, cur: int | None) -> Text:
        t = Text()
        if cur is None:
            t.append("No attempt yet: run one (t) and its metrics show here.\n\n", style=self.cs("txt--title"))
        else:
            t.append(f"No metrics in attempt #{cur}'s log yet.\n\n", style=self.cs("txt--title"))
        pat = self.source.pattern
        if pat:
            t.append("cockpit looks for [metrics] pattern ", style=self.cs("txt--dim"))
            t.append(pat)
            t.append(" and lines such as\n", style=self.cs("txt--dim"))
        else:
            t.append("cockpit reads lines such as\n", style=self.cs("txt--dim"))
        for f in FORMS:
            t.append(f"  {f}\n")
        t.append("\nYour own form: [metrics] pattern, a regex with a named group per value.", style=self.cs("txt--dim"))
        return t

    def _subtitle(self, data: dict[int, AttemptMetrics | None]) -> None:
        cur = self.current()
        m = data.get(cur) if cur is not None else None
        parts: list[str] = []
        if len(self.shown) > 1:
            parts.append(" ".join(f"#{a}" for a in self.shown))
        if m is not None and m.last_step is not None:
            total = m.total(self.source.total_steps)
            parts.append(f"step {fmt_value(m.last_step)}" + (f"/{total}" if total else ""))
            seen = m.last_seen()
            if seen is not None and time.time() - seen > QUIET_S:
                parts.append(f"last step {fmt_age(time.time() - seen)} ago")
            else:
                rate = m.rate()
                if rate:
                    parts.append(fmt_rate(rate))
                eta = m.eta(self.source.total_steps)
                if eta is not None:
                    parts.append(f"ETA {fmt_age(eta)}")
        self.set_subtitle(" · ".join(parts))

    def retheme(self) -> None:
        self._dirty = True
        self.tick(force=True)
