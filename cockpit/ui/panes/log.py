"""The live train log of the current attempt.

The hot path is Textual's plain :class:`~textual.widgets.Log` with ``max_lines`` (RichLog with
megabytes of text freezes), fed in batches (one ``write_lines`` per ~100 ms of collection).  Each
displayed line keeps its line number in the file, so classified errors (matched by the core's
signature table) are marked by number: the deciding line gets a ``✘`` gutter and the layer's
colour, the traceback leading to it a ``│`` gutter, warnings a ``!``.  Colour is never alone.

Follow/pause (``f``), filter (``/``) and search (``s``, ``n``/``N``: :mod:`.log_find`), first error
(``E``) and next error (``e``) act here.  Jumping to an error or a match pauses following; so do
scrolling back (up, page up, home, the mouse wheel; ``end`` follows again) and clicking a line,
which selects it for ``y`` (copy).  The classifier's traceback chains are kept
(``chains``) so a copy of any line of a traceback copies the whole traceback, as the core assembled it.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.strip import Strip
from textual.widgets import Input, Log, Static

from ..format import is_stale, one_line
from ..shown import line_redactor
from .base import Pane, Styled
from .log_bounds import maybe_forget
from .log_find import SearchMixin
from .log_search import SearchHighlighter

if TYPE_CHECKING:
    from ...core.observe import LogView
    from ...core.probes.signatures import Match

#: a traceback chain's id (the classifier's), or ``("line", N)`` for a match that has none
ChainKey: TypeAlias = "int | tuple[str, int]"

__all__ = ["LogPane", "MarkedLog", "Mark"]

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


class LogPane(SearchMixin, Pane):
    pane_id = "log"
    pane_title = "log [2]"
    DEFAULT_CSS = """
    LogPane > #log-search-hint { height: 1; padding: 0 1; }
    """

    BINDINGS = [
        Binding("escape", "cancel_filter", "Cancel filter", show=False),
    ]

    def __init__(self, clock: Callable[[], float], interval: float, max_lines: int,
                 history: Callable[[], tuple[int, list[str]]] | None = None, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(**kw)
        self.clock, self.interval, self.max_lines = clock, interval, max_lines
        self.history = history or (lambda: (1, []))
        self.path: str | None = None
        #: the recorded job's log before a line of it was read (a cockpit started beside a running job)
        self.waiting_for: str | None = None
        self.last_no = 0  # the number of the last line received
        self.following = True
        self.errors: list[int] = []  # line numbers to jump to (first line of each error), sorted
        self.error_labels: dict[int, tuple[str, str]] = {}  # jump line → (layer, label)
        self.chains: dict[ChainKey, Match] = {}  # the classifier's matches with a traceback, latest version per chain
        self.errors_dropped = 0  # errors forgotten once their lines left the rings (log_bounds.py)
        self.view: LogView | None = None
        self._title_text: Text | None = None  # the border title last set (:meth:`_title`)
        self._init_search()

    def compose(self) -> ComposeResult:
        yield MarkedLog(self.max_lines, id="log-view")
        yield Static("", id="log-search-hint", markup=False)
        yield Input(placeholder="filter: show lines containing… (enter: apply, esc: cancel)", id="log-filter", compact=True)

    def on_mount(self) -> None:
        self.query_one("#log-filter", Input).display = False
        self.query_one("#log-search-hint", Static).display = False
        self.log_view.on_pick = self.pick_line
        self.log_view.on_scroll_back = self.set_following
        self._title()
        self.tick()

    @property
    def log_view(self) -> MarkedLog:
        return self.query_one("#log-view", MarkedLog)

    # -- data ---------------------------------------------------------------------------------
    def feed(self, path: str | None, first_no: int, lines: list[str], matches: list[Match], view: LogView | None = None) -> None:
        """One batch from the follower (the hot path)."""
        self.view = view
        if path != self.path:
            self.path = path
            self._reset()
        skip = max(0, self.last_no + 1 - first_no)  # lines shown already (numbers only grow)
        numbered = list(zip(range(first_no + skip, first_no + len(lines)), lines[skip:], strict=True)) if skip < len(lines) else []
        if numbered:
            self.last_no = numbered[-1][0]
            if not self.rewriting:  # a chunked re-show takes these lines when it ends
                self._show(numbered)
        if matches:
            self.add_matches(matches)
            maybe_forget(self)
        self._title()
        self.tick()

    def add_matches(self, matches: list[Match]) -> None:
        log = self.log_view
        for m in matches:
            layer = m.layer.value
            kind = "error" if m.severity.value == "error" else "warning"
            start = m.traceback_start if m.traceback_start else m.line_no
            if kind == "error":
                for n in range(start, m.line_no):
                    if log.marks.get(n) is None or log.marks[n].kind != "error":
                        log.marks[n] = Mark(layer, "trace")
            log.marks[m.line_no] = Mark(layer, kind, m.label)
            if m.traceback:
                self.chains[m.chain_id if m.chain_id is not None else ("line", m.line_no)] = m
            if kind == "error" and start not in self.error_labels:
                bisect.insort(self.errors, start)
            if kind == "error":
                self.error_labels[start] = (layer, m.label)
        log.refresh()

    def _reset(self) -> None:
        self.last_no = 0
        self.errors.clear()
        self.errors_dropped = 0
        self.error_labels.clear()
        self.chains.clear()
        self.log_view.marks.clear()
        self.log_view.reset()
        self.restart_search()

    def rebuild(self) -> None:
        """Re-show every line the observer holds through the active filter."""
        self._refill(rewrite=True)

    # -- commands -----------------------------------------------------------------------------
    def set_following(self, on: bool) -> None:
        self.following = on
        log = self.log_view
        log.auto_scroll = on
        if on:
            log.current = None
            log.scroll_end(animate=False, immediate=True)
            log.refresh()
        self._title()

    def toggle_follow(self) -> None:
        self.set_following(not self.following)

    def open_filter(self) -> None:
        self.open_prompt("filter")

    def open_search(self) -> None:
        self.open_prompt("highlight")

    def pick_line(self, line_no: int) -> None:
        """Select a line (a click): following pauses so it stays where it is."""
        self.set_following(False)
        self.log_view.current = line_no
        self.log_view.refresh()
        self._title()
        self.tick()

    def jump_error(self, *, first: bool = False) -> int | None:
        """Scroll to the first error, or the next one after the last jump (wrapping); pauses."""
        if not self.errors:
            self.app.notify("no classified error in this log (yet)", severity="information", timeout=3, markup=False)
            return None
        log = self.log_view
        if first or log.current is None:
            target = self.errors[0]
        else:
            i = bisect.bisect_right(self.errors, log.current)
            target = self.errors[i % len(self.errors)]
        row = log.row_of(target)
        if row is None:  # filtered out, or already dropped from the ring
            row = bisect.bisect_left(log.numbers, target)
            if row >= len(log.numbers):
                self.app.notify(f"line {target} is not shown (filter: {self.filter!r})", severity="warning", timeout=3, markup=False)
                return None
        self.set_following(False)
        log.current = target
        log.scroll_to(y=max(0, row - 2), animate=False, immediate=True)
        log.refresh()
        self._title()
        return target

    # -- display ------------------------------------------------------------------------------
    def _title(self) -> None:
        t = Text(self.pane_title, no_wrap=True)
        t.append("  " + ("● FOLLOW" if self.following else "⏸ PAUSED"), style=self.cs("txt--fresh") if self.following else self.cs("sev--warning"))
        if self.search_query is not None and self.search_mode is not None:
            t.append(f"  {'filter' if self.search_mode == 'filter' else 'search'}: {one_line(self.search_query.text, 40)}", style=self.cs("txt--action"))
        if self.errors:
            layer, label = self.error_labels[self.errors[0]]
            seen = len(self.errors) + self.errors_dropped
            t.append(f"  ✘ {seen} error{'s' if seen != 1 else ''}: ", style=self.cs("sev--error"))
            t.append(f"[{layer}] ", style=self.layer_style(layer))
            t.append(one_line(label, 50))
        if t != self._title_text:  # each set repaints the whole pane: a batch of lines changes none of it, mostly
            self._title_text = t
            self.border_title = t

    def tick(self) -> None:
        v = self.view
        count = self.count_text()
        count = f"match {count} · " if count else ""
        if v is None:
            self.mark_stale(False)
            w = one_line(self.waiting_for or "")
            waiting = f"waiting for {w if len(w) <= 60 else '…' + w[-59:]}" if w else "no job launched yet"  # its name, not its root
            self.set_subtitle(count + (one_line(self.path) or waiting))
            return
        age = None if v.collected_at is None else self.clock() - v.collected_at
        note = count + one_line(self.path or "", 60)
        if v.error:
            note = count + f"refresh failed: {one_line(v.error, 60)}"
        self.set_freshness(age, is_stale(age, self.interval) or bool(v.error), note=note)

    def retheme(self) -> None:
        self._title()
        if self.search_query is not None:
            self._style_search()  # the match marks take the new theme's colours
        self.log_view.refresh()
