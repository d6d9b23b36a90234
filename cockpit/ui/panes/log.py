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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static

from ..format import is_stale, one_line
from .base import Pane
from .log_bounds import maybe_forget
from .log_find import SearchMixin
from .log_view import ChainKey, Mark, MarkedLog

if TYPE_CHECKING:
    from ...core.observe import LogView
    from ...core.probes.signatures import Match


__all__ = ["LogPane", "MarkedLog", "Mark", "ChainKey"]


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
