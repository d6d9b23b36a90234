"""What every pane shares: theme-driven text styles, freshness, zoom.

Colours reach Python-built text only through *component classes* declared here and styled in
``styles.tcss`` with ``$variables`` (``.cs > .layer--app { color: $layer-app; }``), so a theme
change re-styles everything and no colour is written in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.containers import Vertical
from textual.widget import Widget

from ...core.layers import Finding, Layer
from ..format import fmt_age
from ..shown import shown, shown_block

__all__ = ["STYLE_CLASSES", "Styled", "Pane", "layer_tag", "data_text"]


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


#: a layer, status, outcome or severity: the enum, or its text (a record may hold a value this version does not know)
Named = Enum | str


def _cls(value: Named) -> str:
    return str(value.value if isinstance(value, Enum) else value).replace(" ", "-")  # str(): a journal value may be any JSON


class Styled:
    """Mixin for widgets that build Rich text: ``self.cs("layer--app")`` is the theme's style."""

    DEFAULT_CLASSES = "cs"
    COMPONENT_CLASSES: ClassVar[set[str]]  # set on each subclass below

    def __init_subclass__(cls, **kwargs: Any) -> None:  # Any: class keywords, passed on as Python does
        # Textual collects COMPONENT_CLASSES only from DOMNode classes, not from mixins: put them
        # on every concrete subclass itself.
        cls.COMPONENT_CLASSES = set(STYLE_CLASSES) | set(cls.__dict__.get("COMPONENT_CLASSES", set()))
        super().__init_subclass__(**kwargs)

    def cs(self, *names: str) -> Style:
        widget: Widget = self  # type: ignore[assignment]
        if not widget.is_attached:  # not mounted yet: plain text (it is redrawn once mounted)
            return Style()
        # The full style resolves "auto" and translucent colours against this widget's background
        # (a partial one cannot); then the background is dropped so the text sits on whatever is
        # under it (a table's cursor row, a zebra stripe).
        full = widget.get_component_rich_style(*names)
        return Style(color=full.color, bold=full.bold, italic=full.italic, underline=full.underline,
                     reverse=full.reverse, strike=full.strike)

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
