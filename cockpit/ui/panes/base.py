"""What every pane shares: theme-driven text styles, freshness, zoom.

Colours reach Python-built text only through *component classes* declared here and styled in
``styles.tcss`` with ``$variables`` (``.cs > .layer--app { color: $layer-app; }``), so a theme
change re-styles everything and no colour is written in Python.

The component classes are the app's (``CockpitApp.COMPONENT_CLASSES``), not each widget's: Textual
styles a widget's component classes as one hidden node per class, again on every restyle of the
widget (a resize, a focus change, a class set on the screen), and 33 classes on each of ~10 widgets
were two thirds of the stylesheet work of a start.  On the app they are styled only when the whole
stylesheet is (a theme change).  :meth:`Styled.cs` then resolves the class's colour and text style
against the widget's own background, as Textual resolves a widget's component style.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.containers import Vertical
from textual.css.styles import StylesBase
from textual.widget import Widget

from ...core.layers import Finding, Layer
from ..format import fmt_age
from ..shown import shown, shown_block

__all__ = ["STYLE_CLASSES", "Styled", "Pane", "component_text_style", "layer_tag", "data_text"]


def data_text(value: object, style: Style | str = "") -> Text:
    """Remote, job or journal text as a plain ``Text``: never parsed as markup (``[/]``,
    ``[rank0]:``, ``[link=…]``), no escape or control character, newlines kept, secrets hidden
    in share mode (:func:`~cockpit.ui.shown.shown_block`)."""
    return value if isinstance(value, Text) else Text(shown_block(value), style=style)

STYLE_CLASSES = frozenset(
    {f"layer--{layer.value}" for layer in Layer}
    | {f"st--{s}" for s in ("ok", "fail", "pending", "running", "skipped", "not-reached")}
    | {f"out--{o}" for o in ("passed", "failed", "untested", "interrupted", "pending", "running")}
    | {"sev--error", "sev--warning", "sev--info", "txt--dim", "txt--key", "txt--job", "txt--zombie", "txt--dstate",
       "txt--stale", "txt--fresh", "txt--readonly", "txt--action", "txt--title", "txt--spark"}
)


def component_text_style(widget: Widget, comp: StylesBase) -> Style:
    """The colour and text style of component styles ``comp`` as a child of ``widget``: what
    Textual's ``widget.get_component_rich_style`` gives for a component class of the widget's own
    (``DOMNode.rich_style`` over the widget's ancestors and the component, then text opacity),
    without its background, so the text sits on whatever is under it (a table's cursor row, a
    zebra stripe).  The full style resolves "auto" and translucent colours against the widget's
    background, which a partial one cannot."""
    background = Color(0, 0, 0, 0)
    color = Color(255, 255, 255, 0)
    style = Style()
    opacity = 1.0
    chain: list[StylesBase] = [node.styles for node in reversed(widget.ancestors_with_self)]
    chain.append(comp)
    for styles in chain:
        opacity *= styles.opacity
        if styles.has_rule("background"):
            tinted = styles.background.tint(styles.background_tint)
            text_background = background + tinted
            background += tinted.multiply_alpha(opacity)
        else:
            text_background = background
        if styles.has_rule("color"):
            color = styles.color
        style += styles.text_style
        if styles.has_rule("auto_color") and styles.auto_color:
            color = text_background.get_contrast_text(color.a)
    fg = (background + color) if (background.a or color.a) else None
    if comp.text_opacity < 1 and background.a:  # as Textual: the text blended into the opaque background
        fg = Color.from_rich_color(background.rich_color) + comp.color.multiply_alpha(comp.text_opacity)
    return Style(color=fg.rich_color if fg is not None else None, bold=style.bold, italic=style.italic,
                 underline=style.underline, reverse=style.reverse, strike=style.strike)


#: a layer, status, outcome or severity: the enum, or its text (a record may hold a value this version does not know)
Named = Enum | str


def _cls(value: Named) -> str:
    return str(value.value if isinstance(value, Enum) else value).replace(" ", "-")  # str(): a journal value may be any JSON


class Styled:
    """Mixin for widgets that build Rich text: ``self.cs("layer--app")`` is the theme's style (the
    app's component class, see the module's docstring), resolved against this widget's background."""

    _cs_kept: dict[tuple[str, ...], Style] | None = None

    def cs(self, *names: str) -> Style:
        widget: Widget = self  # type: ignore[assignment]
        if not widget.is_attached:  # not mounted yet: plain text (it is redrawn once mounted)
            return Style()
        kept = self._cs_kept
        if kept is None:
            kept = self._cs_kept = {}
        style = kept.get(names)
        if style is None:
            try:
                comp = widget.app.get_component_styles(*names)
            except KeyError:  # an app without cockpit's classes, or not styled yet: plain text
                return Style()
            style = kept[names] = component_text_style(widget, comp)
        return style

    def notify_style_update(self) -> None:
        """The widget was restyled (its own classes, an ancestor's, a theme): resolve its styles again
        (when Textual drops its own cache of component styles)."""
        self._cs_kept = None
        super().notify_style_update()  # type: ignore[misc]

    def layer_style(self, layer: Named | None) -> Style:
        return self.cs(f"layer--{_cls(layer)}") if layer else Style()

    def status_style(self, status: Named) -> Style:
        return self.cs(f"st--{_cls(status)}")

    def outcome_style(self, outcome: Named) -> Style:
        o = _cls(outcome)
        return self.cs(f"out--{o}") if f"out--{o}" in STYLE_CLASSES else Style()

    def severity_style(self, severity: Named) -> Style:
        s = _cls(severity)
        return self.cs(f"sev--{s}") if f"sev--{s}" in STYLE_CLASSES else Style()


def layer_tag(styled: Styled, layer: Named | None) -> Text:
    """``[app]`` in the layer's colour: the label says it, the colour repeats it."""
    name = _cls(layer) if layer else "?"
    return Text(f"[{name}]", style=styled.layer_style(layer) if layer else Style())


_SEV_GLYPH = {"error": "✘", "warning": "!", "info": "i"}


def findings_text(styled: Styled, findings: Sequence[Finding], limit: int, *, advice: bool = False) -> Text:
    """One line per finding: severity glyph, ``[layer]``, summary (and advice); ``… N more`` after ``limit``."""
    t = Text()
    for i, f in enumerate(findings[:limit]):
        if i:
            t.append("\n")
        sev = f.severity.value
        t.append(_SEV_GLYPH.get(sev, "!") + " ", style=styled.severity_style(sev))
        t.append_text(layer_tag(styled, f.layer))
        t.append(f" {shown(f.summary)}")
        if advice and f.advice:
            t.append(f" → {shown(f.advice)}", style=styled.cs("txt--dim"))
    return t


def set_static(widget: Any, content: Any, *, layout: bool = True) -> None:  # Any: a Static-like widget, its content any visual
    """``widget.update(content)`` only when the content differs from what it shows: each update of
    a ``Static`` lays the screen out again and repaints, which an idle refresh that brings the same
    values must not cost.  ``layout=False`` for a line whose height cannot change (a ticking time)."""
    old = getattr(widget, "_ck_shown", None)
    if old != content:
        widget._ck_shown = content
        widget.update(content, layout=layout or not old)  # from nothing to a line: lay it out


class Pane(Styled, Vertical):
    """A bordered, zoomable pane whose subtitle says how old its data is."""

    ALLOW_MAXIMIZE = True
    pane_id: ClassVar[str] = ""
    pane_title: ClassVar[str] = ""
    #: the refresh interval the pane's staleness is judged by (set by each pane's ``__init__``)
    interval: float

    def __init__(self, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(id=kw.pop("id", self.pane_id), **kw)
        self.border_title = self.pane_title
        self._dirty = False
        self._subtitle_text: str | None = None

    def tick(self) -> None:
        """Re-say the data's age (called every second, and after each update)."""

    def set_freshness(self, age: float | None, stale: bool, *, note: str = "") -> None:
        """Mark the pane stale (dashed warning border, dimmed) or fresh, and say so.

        Fresh data says ``live``, not its age in seconds: an age that ticks every second repaints
        every pane every second (most of an idle cockpit's CPU); stale data says its age, which
        then ticks.  The text is only set when it changes (each set repaints the whole pane), and
        the class too (Textual re-applies the stylesheet to the node on every ``set_class``)."""
        self.mark_stale(stale)
        when = ("no data yet" if age is None else f"{fmt_age(age)} ago") if stale or age is None else "live"
        when = f"⚠ {when}" if stale else when
        self.set_subtitle(when + (f" · {note}" if note else ""))

    def mark_stale(self, stale: bool) -> None:
        """The ``-stale`` class (dashed warning border, dimmed), set only on change."""
        if self.has_class("-stale") != stale:
            self.set_class(stale, "-stale")

    def set_subtitle(self, text: str) -> None:
        """The border's subtitle, as plain text (data, never markup); nothing repaints when unchanged."""
        if text != self._subtitle_text:
            self._subtitle_text = text
            self.border_subtitle = Text(text)

    @property
    def hidden_by_zoom(self) -> bool:
        m = self.screen.maximized if self.is_mounted else None
        return m is not None and m is not self and self not in m.ancestors_with_self
