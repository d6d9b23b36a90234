"""The text styles of Python-built text (``Styled.cs``, cockpit/ui/panes/base.py) are the app's
component classes, resolved against each widget's own background: the same style Textual gives a
component class of the widget's own, for every styled widget, in both themes and on a stale pane."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.style import Style
from textual.widget import Widget

from cockpit.ui.panes.base import STYLE_CLASSES, Styled
from tests.test_ui_support import story_app, wait_for


class _Probe(Widget):
    """A hidden child holding the classes itself, as every styled widget once did: Textual's answer."""

    COMPONENT_CLASSES: ClassVar[set[str]] = set(STYLE_CLASSES)
    DEFAULT_CLASSES = "cs"
    DEFAULT_CSS = "_Probe { display: none; }"


def _textual(probe: _Probe, name: str) -> Style:
    full = probe.get_component_rich_style(name)
    return Style(color=full.color, bold=full.bold, italic=full.italic, underline=full.underline,
                 reverse=full.reverse, strike=full.strike)


async def _compare(app, pilot, what: str) -> int:
    widgets = [w for w in app.screen.query("*") if isinstance(w, Styled)]
    probes = []
    for w in widgets:
        probe = _Probe()
        await w.mount(probe)
        probes.append(probe)
    await wait_for(pilot, lambda: all(p.is_mounted for p in probes), what="the probes mounted")
    for w, probe in zip(widgets, probes, strict=True):
        for name in sorted(STYLE_CLASSES):
            assert w.cs(name) == _textual(probe, name), f"{what}: {type(w).__name__}#{w.id} {name}"
    for probe in probes:
        await probe.remove()
    return len(widgets)


async def test_every_styled_widget_gets_the_themes_style_from_the_apps_classes(tmp_path: Path) -> None:
    app = story_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: len(app.query("GpuCard")) == 4, what="the GPU cards")
        kinds = {type(w).__name__ for w in app.screen.query("*") if isinstance(w, Styled)}
        assert {"StatusLine", "VerdictStrip", "ProcsPane", "LogPane", "MarkedLog", "GpuPane", "GpuCard", "Spark", "HistoryPane"} <= kinds
        # the widgets hold none of the classes (each would cost a hidden node per class on every restyle)
        for w in app.screen.query("*"):
            assert not set(getattr(type(w), "COMPONENT_CLASSES", set())) & STYLE_CLASSES, type(w).__name__
        n = await _compare(app, pilot, "dark")
        assert n >= 12
        gpu = app.query_one("GpuCard")
        assert gpu.cs("txt--title").bold and app.query_one("Spark").cs("txt--spark").color is not None  # styled, not plain
        app.theme = "light"
        await wait_for(pilot, lambda: app.query_one("StatusLine").cs("txt--dim") != Style() and app.current_theme.name == "light",
                       what="the light theme")
        await _compare(app, pilot, "light")
        pane = app.query_one("#procs")
        pane.mark_stale(True)
        await pilot.pause()
        await _compare(app, pilot, "stale pane")
