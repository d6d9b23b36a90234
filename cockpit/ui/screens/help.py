"""Every key (from the one action registry, with the user's keymap applied), the layers and the
outcomes, with their glyphs and colours."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Size
from textual.widgets import Static

from ...core.keymap import ACTIONS, UIAction
from ...core.layers import LAYER_MEANING, Layer
from ...core.text import sanitize
from ..format import STATUS_GLYPH, outcome_text
from ..panes.base import STYLE_CLASSES, Styled
from .backdrop import BackdropModal

__all__ = ["HelpScreen", "key_label"]

#: the search syntax and the clipboard over SSH/tmux, in the help screen (keys named by their defaults)
SEARCH_HELP = (
    "s marks matches (every line stays, following pauses), / filters; options come first, grep-style:",
    "  -r regex (Python syntax)   -s case-sensitive (default: ignore case)   -C N: N lines of context around",
    "  each match when filtering   -- ends the options;  ctrl+r / ctrl+s switch -r / -s, also in the active search",
    "n / N: next / previous match (the subtitle counts 3/17); esc clears the search and follows again",
    "y copies to your local clipboard with OSC 52, over SSH too: the selected log line (n, e or a click selects",
    "  one) or its whole traceback, an attempt as Markdown, a verdict with its evidence, a process's findings",
    "  inside tmux put  set -s set-clipboard on  in ~/.tmux.conf (tmux ignores programs' copies by default)",
    "m: mouse capture off/on: off, the terminal selects text itself (tmux with mouse on: hold shift)",
)

_KEY_NAMES = {"question_mark": "?", "exclamation_mark": "!", "slash": "/", "semicolon": ";", "greater_than_sign": ">",
              "less_than_sign": "<", "right_square_bracket": "]", "plus": "+"}


def key_label(keys: str) -> str:
    out = []
    for k in keys.split(","):
        k = k.strip()
        out.append(_KEY_NAMES.get(k, k))
    return sanitize(" ".join(out))  # the user's keymap: shown as typed, never as escapes


#: the help's rendered lines and height, per what it shows (see ``HelpBody._render_content``)
_LINES: dict[tuple[object, ...], Any] = {}  # Any: Textual's _RenderCache
_HEIGHTS: dict[tuple[object, ...], int] = {}


def _trim(kept: dict[tuple[object, ...], Any]) -> None:  # Any: what is kept
    while len(kept) > 4:  # a few sizes and themes; the oldest goes
        del kept[next(iter(kept))]


class HelpBody(Styled, Static):
    def __init__(self, keymap: dict[str, str], *, read_only: bool, demo: bool, allowed: Callable[[UIAction], bool], user: list[UIAction] | None = None) -> None:
        super().__init__("", markup=False)
        self.keymap, self.read_only, self.demo, self.allowed = keymap, read_only, demo, allowed
        self.user = user or []

    _built: tuple[object, ...] | None = None  # the key of the table shown

    def on_mount(self) -> None:
        self.rebuild()

    def rebuild(self) -> None:
        self._built = self._kept_key()
        self.update(self.build())

    def rebuild_if_changed(self) -> None:
        """The help screen is kept and reopened (views.py): a table built from what changed since (what is allowed now, the theme) is built again."""
        if self._built is not None and self._kept_key() != self._built:
            self.rebuild()

    # The help is the same table each time it opens, and rendering it (a Rich table, twice: once
    # for its height, once for its lines) was most of what opening it cost: the lines and the
    # height are kept, per everything the table is built from, for the next help screen.
    def _kept_key(self) -> tuple[object, ...]:
        acts = [a for a in ACTIONS if self.demo or not a.demo_only] + self.user
        return (tuple(sorted(self.keymap.items())), self.read_only, self.demo, tuple(self.user), tuple(self.allowed(a) for a in acts),
                self.visual_style, tuple(self.cs(n) for n in sorted(STYLE_CLASSES)))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if not self.is_attached:
            return super().get_content_height(container, viewport, width)
        key = (self._kept_key(), width)
        height = _HEIGHTS.get(key)
        if height is None:
            height = _HEIGHTS[key] = super().get_content_height(container, viewport, width)
            _trim(_HEIGHTS)
        return height

    def _render_content(self) -> None:  # Textual's: the lines of the whole widget, at its size
        key = (self._kept_key(), self.size)
        kept = _LINES.get(key)
        if kept is None:
            super()._render_content()
            _LINES[key] = self._render_cache
            _trim(_LINES)
        else:
            self._render_cache = kept
            self._dirty_regions.clear()

    def build(self) -> Table:
        outer = Table.grid(padding=(0, 1))
        outer.add_column()
        keys = Table(show_header=True, header_style=self.cs("txt--title"), box=None, padding=(0, 1), expand=True)
        keys.add_column("key", no_wrap=True)
        keys.add_column("id", no_wrap=True, style=self.cs("txt--dim"))
        keys.add_column("what it does", ratio=1)
        for a in ACTIONS:
            if a.demo_only and not self.demo:
                continue
            keys.add_row(*self._row(a))
        outer.add_row(Text("Keys (remap in [keymap]: id = \"key\"; ctrl+p: every command)", style=self.cs("txt--title")))
        outer.add_row(keys)
        if self.user:
            outer.add_row(Text(""))
            outer.add_row(Text("Your actions ([[actions]] in the config; `cockpit run-action NAME` runs one headless)", style=self.cs("txt--title")))
            mine = Table(show_header=False, box=None, padding=(0, 1), expand=True)
            mine.add_column("key", no_wrap=True)
            mine.add_column("id", no_wrap=True, style=self.cs("txt--dim"))
            mine.add_column("what it does", ratio=1)
            for a in self.user:
                key, ident, desc = self._row(a)
                mine.add_row(key if a.key else Text("—", style=self.cs("txt--dim")), ident, desc)
            outer.add_row(mine)
        outer.add_row(Text(""))
        outer.add_row(Text("Layers: where a failure lives, bottom to top", style=self.cs("txt--title")))
        for layer in Layer:
            t = Text("  ")
            t.append(f"[{layer.value}]", style=self.layer_style(layer.value))
            t.append(f" {LAYER_MEANING[layer]}")
            outer.add_row(t)
        outer.add_row(Text(""))
        outer.add_row(Text("Outcomes of an attempt", style=self.cs("txt--title")))
        for o, lay in (("passed", None), ("failed", "app"), ("untested", "ssh"), ("interrupted", None), ("pending", None), ("running", None)):
            outer.add_row(Text("  " + outcome_text(o, lay), style=self.outcome_style(o)))
        outer.add_row(Text(""))
        outer.add_row(Text("Stage glyphs", style=self.cs("txt--title")))
        st = Text("  ")
        for name, g in STATUS_GLYPH.items():
            st.append(g, style=self.status_style(name))
            st.append(f" {name}   ")
        outer.add_row(st)
        outer.add_row(Text("  process flags: ● the job's own   Z! zombie (shows its parent)   D! stuck in the kernel", style=self.cs("txt--dim")))
        outer.add_row(Text("  log gutter: ✘ error line   │ its traceback   ! warning   ▶ where the last jump went", style=self.cs("txt--dim")))
        outer.add_row(Text(""))
        outer.add_row(Text("Searching and copying", style=self.cs("txt--title")))
        for line in SEARCH_HELP:
            outer.add_row(Text("  " + line))
        return outer

    def _row(self, a: UIAction) -> tuple[Text, Text, Text]:
        key = key_label(self.keymap.get(a.id, a.key))
        desc = Text(a.help)
        if a.destructive:
            desc.append("  (asks first)", style=self.cs("sev--warning"))
        if not self.allowed(a):
            desc.append("  (disabled: read-only)" if self.read_only and a.acts else "  (disabled)", style=self.cs("txt--dim"))
        return Text(key, style=self.cs("txt--key")), Text(a.id), desc  # a str cell would be parsed as markup


class HelpScreen(BackdropModal[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close", id="help-close")]

    def __init__(self, keymap: dict[str, str], *, read_only: bool = False, demo: bool = False, allowed: Callable[[UIAction], bool] | None = None,
                 user: list[UIAction] | None = None) -> None:
        super().__init__()
        self.keymap, self.read_only, self.demo = keymap, read_only, demo
        self.allowed = allowed or (lambda a: True)
        self.user = user or []

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box", classes="modal-box"):
            yield Static("cockpit help" + ("  ·  READ-ONLY: every action is disabled" if self.read_only else ""), classes="modal-title")
            with VerticalScroll(id="help-scroll"):
                yield HelpBody(self.keymap, read_only=self.read_only, demo=self.demo, allowed=self.allowed, user=self.user)
            yield Static("esc: close", classes="modal-dim")

    def same_as(self, keymap: dict[str, str], *, read_only: bool, demo: bool, user: list[UIAction]) -> bool:
        """Whether this (kept) screen shows what a new one built from these would."""
        return (self.keymap, self.read_only, self.demo, self.user) == (keymap, read_only, demo, user)

    def on_screen_resume(self) -> None:  # reopened: what is allowed may have changed, and it opens at the top
        for body in self.query(HelpBody):
            body.rebuild_if_changed()
        for scroll in self.query("#help-scroll"):
            scroll.scroll_home(animate=False)

    def action_close(self) -> None:
        self.dismiss(None)
