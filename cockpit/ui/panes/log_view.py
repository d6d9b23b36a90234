"""The log pane's view: a Textual :class:`~textual.widgets.Log` whose rows know their line number
in the file and draw the classifier's marks by it (:class:`MarkedLog`), apart from the pane
(:mod:`.log`) so that the pane's search mixin (:mod:`.log_find`) can name it without importing the pane.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable
from typing import Any, TypeAlias

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.strip import Strip
from textual.widgets import Log

from ..shown import line_redactor
from .base import Styled
from .log_search import SearchHighlighter

__all__ = ["MarkedLog", "Mark", "ChainKey"]

#: a traceback chain's id (the classifier's), or ``("line", N)`` for a match that has none
ChainKey: TypeAlias = "int | tuple[str, int]"

_SPLITS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


class Mark:
    __slots__ = ("layer", "kind", "label")

    def __init__(self, layer: str, kind: str, label: str = "") -> None:
        self.layer, self.kind, self.label = layer, kind, label  # kind: error | trace | warning


_ONE_ROW = str.maketrans({c: " " for c in _SPLITS})


def _single_line(line: str) -> str:
    """Log.write_lines splits on every line boundary Python knows; keep one file line one row."""
    if line.isprintable():  # the common case, in C: none of the boundaries is printable
        return line
    return line.translate(_ONE_ROW)


class MarkedLog(Styled, Log):
    """A Log whose rows know their line number in the file, and draw marks by that number."""

    GUTTER = {"error": "✘ ", "trace": "│ ", "warning": "! "}
    COMPONENT_CLASSES = {"search--match"}
    DEFAULT_CSS = """
    MarkedLog > .search--match { background: $warning 45%; text-style: bold underline; }
    """

    def __init__(self, max_lines: int, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(max_lines=max_lines, auto_scroll=True, highlight=False, **kw)
        self.numbers: deque[int] = deque(maxlen=max_lines)
        self.marks: dict[int, Mark] = {}
        self.current: int | None = None  # the line number the last jump (or click) went to
        self.search = SearchHighlighter()  # drawn when ``highlight`` is on (a search is active)
        self.highlighter = self.search
        self.on_pick: Callable[[int], None] | None = None
        #: the person scrolled back from the newest lines (up, page up, home, the wheel): following
        #: pauses (the title said FOLLOW over a view that no longer moved); ``end`` follows again
        self.on_scroll_back: Callable[[bool], None] | None = None
        #: share mode: every line through the redactor (a PEM key's body spans lines: it keeps state)
        self.redact_line = line_redactor()

    def add(self, numbered: list[tuple[int, str]]) -> None:
        if not numbered:
            return
        numbers, texts = zip(*numbered, strict=True)
        self.numbers.extend(numbers)
        full = self.max_lines is not None and len(self._lines) + len(numbered) > self.max_lines
        red = self.redact_line
        if red is None and "".join(texts).isprintable():  # the common case, in C: every line is one row already
            rows = list(texts)
        else:
            rows = [_single_line(red(t) if red is not None else t) for t in texts]
        self.write_lines(rows)
        if full:
            # Textual's Log refreshes the rows where the new lines *would* have gone before
            # pruning; once the ring is full every row shifts, and at the bottom scroll_end is a
            # no-op, so the screen froze on old lines at high rates: repaint the visible region
            self.refresh()

    def _update_size(self, updates: int, lines: list[str]) -> None:  # type: ignore[override]
        """The widest line, for the horizontal scroll: Textual measures each new line in a thread
        worker (a worker per batch); a batch of plain ASCII lines is measured here, in C."""
        if not lines:
            return
        joined = "".join(lines)
        if joined.isascii() and joined.isprintable():  # one cell a character; no tab, no escape to expand
            self._update_maximum_width(updates, max(map(len, lines)))
        else:
            process = self._process_line
            self._update_maximum_width(updates, max(cell_len(process(line)) for line in lines))

    def reset(self) -> None:
        self.clear()
        self.numbers.clear()
        self.current = None
        self.redact_line = line_redactor()

    def notify_style_update(self) -> None:
        super().notify_style_update()  # drops the rendered-line cache
        if self.is_attached:  # a theme change: the search marks take its colours
            try:
                self.search.match_style = self.get_component_rich_style("search--match")
            except KeyError:  # the stylesheet has not reached this widget yet: the default mark (bold underline) stays
                pass

    def on_resize(self, event: events.Resize) -> None:
        """Following, the view stays on the newest lines when its size changes (zoom, a resized
        terminal, under a modal too): Textual scrolls on new lines only from the end, and a view
        that shrank is above it."""
        if self.auto_scroll:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def _back(self, following: bool) -> None:
        if self.on_scroll_back is not None and following != self.auto_scroll:
            self.on_scroll_back(following)

    def action_scroll_up(self) -> None:
        self._back(False)
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self._back(False)
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._back(False)
        super().action_scroll_home()

    def action_scroll_end(self) -> None:
        super().action_scroll_end()
        self._back(True)

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if not (event.ctrl or event.shift) and self.scroll_y > 0:
            self._back(False)
        super()._on_mouse_scroll_up(event)

    def on_click(self, event: events.Click) -> None:
        """A click selects the line under the mouse (for ``y``)."""
        row = int(self.scroll_offset.y) + int(event.y)
        if 0 <= row < len(self.numbers) and self.on_pick is not None:
            self.on_pick(self.numbers[row])

    def text_of(self, line_no: int) -> str | None:
        row = self.row_of(line_no)
        return self.lines[row] if row is not None and row < len(self.lines) else None

    def row_of(self, line_no: int) -> int | None:
        i = bisect.bisect_left(self.numbers, line_no)  # numbers only grow
        return i if i < len(self.numbers) and self.numbers[i] == line_no else None

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        row = int(self.scroll_offset.y) + y
        if row >= len(self.numbers) or row >= len(self.lines):
            return strip
        no = self.numbers[row]
        mark = self.marks.get(no)
        if mark is None and self.current != no:
            return strip
        if mark is None:
            style, gutter = Style(), "▶ "
        elif mark.kind == "warning":
            style, gutter = self.cs("sev--warning"), self.GUTTER["warning"]
        else:
            style = self.layer_style(mark.layer)
            if mark.kind == "trace":
                style = style + Style(bold=False)
            gutter = self.GUTTER[mark.kind]
        if self.current == no:
            style = style + Style(reverse=True)
        body = Strip(list(Segment.apply_style(list(strip), None, style)), strip.cell_length)
        head = Strip([Segment(gutter, self.rich_style + style + Style(bold=True))], len(gutter))
        return Strip.join([head, body]).crop(0, self.size.width)
