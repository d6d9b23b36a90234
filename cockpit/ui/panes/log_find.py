"""The log pane's search: the prompt, filter and highlight modes, ``n``/``N``, ``Esc``.

A mixin of :class:`~.log.LogPane` (which owns the lines, the marks and following).  Two modes share
one prompt and one query syntax (:mod:`.log_search`):

* **filter** (``/``): only matching lines are shown, with ``-C N`` lines of context around each
  (dimmed); new lines are filtered as they arrive;
* **highlight** (``s``): every line stays, matches are marked, following pauses and the view jumps
  to the first match below the top of the screen; ``n``/``N`` go to the next/previous match
  (wrapping, with a toast), the subtitle counts ``3/17``.

``Esc`` (in the log pane) clears the search and follows again.  A query that does not parse (a bad
regex) is reported and the previous search stays.  A ring larger than :data:`SYNC_LIMIT` lines is
matched (and, for a filter, re-shown) in a worker on the event loop, in slices of about
:data:`~.log_search.SLICE_S` of work with a yield between them, so a 200,000-line search never
freezes the TUI; lines that arrive meanwhile are taken when it ends.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Input, Static

from .log_search import CHUNK, SLICE_S, ContextFilter, Query, QueryError, parse_query, scan, toggle_option

if TYPE_CHECKING:
    from .base import Pane
    from .log_view import MarkedLog

    _Base = Pane
else:
    _Base = object

__all__ = ["SearchMixin", "SYNC_LIMIT", "MODES"]

#: up to this many lines a search runs at once; above it, in chunks that yield to the event loop
SYNC_LIMIT = 20_000
MODES = {"filter": "filter", "highlight": "search"}
_HINT = "-r regex · -s case-sensitive · -C N context · ctrl+r/ctrl+s toggle · enter: apply · esc: cancel"


class SearchMixin(_Base):
    """Search state and commands of the log pane (see the module docstring)."""

    history: Callable[[], tuple[int, list[str]]]
    following: bool
    last_no: int

    if TYPE_CHECKING:  # provided by LogPane
        @property
        def log_view(self) -> MarkedLog: ...
        def set_following(self, on: bool) -> None: ...
        def _title(self) -> None: ...

    def _init_search(self) -> None:
        self.search_query: Query | None = None
        self.search_mode: str | None = None  # "filter" | "highlight" | None
        self.hits: list[int] = []  # numbers of the matching lines in the view, sorted
        self._cf: ContextFilter | None = None
        self._pending: int | None = None  # a chunked search is running: the last line number it covers
        self._rewriting = False  # … and it re-shows the lines (a filter): new lines wait for its end
        self._gen = 0
        self._prompt_mode = "filter"

    @property
    def filter(self) -> str:
        """The active filter's text ("" when the log is not filtered)."""
        return self.search_query.text if self.search_mode == "filter" and self.search_query is not None else ""

    @property
    def searching(self) -> bool:
        return self._pending is not None

    @property
    def rewriting(self) -> bool:
        """A chunked filter is re-showing the lines: ``feed`` leaves the view alone until it ends."""
        return self._pending is not None and self._rewriting

    def restart_search(self) -> None:
        """A new log: the search stays, its matches and any running scan go."""
        self._gen += 1
        self._pending = None
        self.hits = []
        self._cf = ContextFilter(self.search_query) if self.search_mode == "filter" and self.search_query is not None else None

    # -- the prompt ---------------------------------------------------------------------------
    def open_prompt(self, mode: str) -> None:
        self._prompt_mode = mode
        inp = self.query_one("#log-filter", Input)
        inp.value = self.search_query.text if self.search_query is not None else ""
        inp.placeholder = ("filter: show lines containing…" if mode == "filter" else "search: mark lines containing…") + "  (-r regex, -s case, -C N)"
        inp.display = True
        self._hint(inp.value)
        self.query_one("#log-search-hint", Static).display = True
        inp.focus()

    def close_prompt(self) -> None:
        self.query_one("#log-filter", Input).display = False
        self.query_one("#log-search-hint", Static).display = False
        self.log_view.focus()

    @property
    def prompt_open(self) -> bool:
        return bool(self.query_one("#log-filter", Input).display)

    def _hint(self, value: str) -> None:
        """The line above the prompt: the mode, how the text will be matched (or why it cannot be), the options."""
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(f"{MODES[self._prompt_mode]} · ", style=self.cs("txt--action"))
        try:
            q = parse_query(value)
        except QueryError as e:
            t.append(str(e), style=self.cs("sev--error"))
        else:
            if q is not None:
                t.append(q.describe())
            else:
                t.append("every line" if self._prompt_mode == "filter" else "type a text", style=self.cs("txt--dim"))
            t.append("   " + _HINT, style=self.cs("txt--dim"))
        self.query_one("#log-search-hint", Static).update(t)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "log-filter":
            event.stop()
            self._hint(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "log-filter":
            return
        event.stop()
        if self.apply_search(event.value, self._prompt_mode):
            self.close_prompt()

    def toggle_search_option(self, option: str) -> None:
        """``ctrl+r``/``ctrl+s``: switch ``-r``/``-s`` in the open prompt, else in the active search."""
        inp = self.query_one("#log-filter", Input)
        if inp.display:
            inp.value = toggle_option(inp.value, option)
            inp.cursor_position = len(inp.value)
            return
        if self.search_query is None or self.search_mode is None:
            self.app.notify("no search to change: s searches, / filters (then ctrl+r: regex, ctrl+s: case)", timeout=4, markup=False)
            return
        text = toggle_option(self.search_query.text, option)
        if self.apply_search(text, self.search_mode) and self.search_query is not None:
            self.app.notify(f"{MODES[self.search_mode or 'filter']}: {self.search_query.describe()}", timeout=3, markup=False)

    # -- applying and clearing ------------------------------------------------------------------
    def set_filter(self, text: str) -> bool:
        return self.apply_search(text, "filter")

    def apply_search(self, text: str, mode: str) -> bool:
        """Search for ``text`` in ``mode``; False (with a notification) when it does not parse: the previous search stays."""
        try:
            q = parse_query(text)
        except QueryError as e:
            self.app.notify(f"{e}; the previous search stays", title="search", severity="error", timeout=8, markup=False)
            return False
        if q is None:
            self.clear_search(resume=False)
            return True
        was_filter = self.search_mode == "filter"
        self.search_query, self.search_mode = q, mode
        self._style_search()
        if mode == "highlight":
            self.set_following(False)
        self._refill(rewrite=was_filter or mode == "filter", then=self._first_jump if mode == "highlight" else None)
        return True

    def clear_search(self, *, resume: bool = True) -> None:
        was_filter = self.search_mode == "filter"
        self.search_query, self.search_mode = None, None
        self._style_search()
        if was_filter:
            self._refill(rewrite=True)
        else:
            self._gen += 1
            self._pending = None
            self.hits = []
        if resume:
            self.set_following(True)
        self._title()
        self.tick()

    def _style_search(self) -> None:
        log = self.log_view
        hl = log.search
        hl.query = self.search_query
        show_context = self.search_mode == "filter" and self.search_query is not None and self.search_query.context > 0
        hl.context_style = self.cs("txt--dim") if show_context else None
        log.highlight = self.search_query is not None
        log.notify_style_update()  # drop the rendered-line cache (the marks changed) and take the theme's mark style
        log.refresh()

    # -- filling the view -------------------------------------------------------------------------
    def _show(self, numbered: list[tuple[int, str]]) -> None:
        """New lines into the view, through the active search (the hot path of a live log)."""
        self.log_view.add(self._through(numbered))
        if self._pending is None:
            self._prune_hits()

    def _through(self, numbered: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """The lines to show of ``numbered`` (all, or a filter's); their matches go to ``hits``."""
        if self._cf is not None:
            shown, hits = self._cf.feed(numbered)
            self.hits.extend(hits)
            return shown
        if self.search_mode == "highlight" and self.search_query is not None and numbered:
            m = self.search_query.matcher
            self.hits.extend(n for n, t in numbered if m(t))
        return numbered

    def _prune_hits(self) -> None:
        numbers = self.log_view.numbers
        if self.hits and numbers and self.hits[0] < numbers[0]:
            del self.hits[:bisect.bisect_left(self.hits, numbers[0])]

    def _refill(self, *, rewrite: bool, then: Callable[[], None] | None = None) -> None:
        """Re-show the observer's lines through the search (``rewrite``), or re-match the lines shown."""
        log = self.log_view
        self._gen += 1
        self.hits = []
        self._cf = ContextFilter(self.search_query) if self.search_mode == "filter" and self.search_query is not None else None
        numbers: Sequence[int]
        if rewrite:
            first, lines = self.history()
            numbers = range(first, first + len(lines))
            log.reset()
            if lines:
                self.last_no = max(self.last_no, numbers[-1])
        else:
            numbers, lines = list(log.numbers), list(log.lines)
        if len(lines) <= SYNC_LIMIT:
            self._pending = None
            self._take(numbers, lines, rewrite)
            self._done(then)
            return
        self._pending, self._rewriting = numbers[-1], rewrite
        self._title()
        self.tick()
        self.run_worker(self._refill_chunks(self._gen, numbers, lines, rewrite, then), name="log-search", group="log-search",
                        exclusive=True, exit_on_error=False)

    def _take(self, numbers: Sequence[int], lines: Sequence[str], rewrite: bool) -> None:
        if rewrite:
            self.log_view.add(self._through(list(zip(numbers, lines, strict=False))))
        elif self.search_mode == "highlight" and self.search_query is not None:
            self.hits.extend(scan(numbers, lines, self.search_query))

    async def _refill_chunks(self, gen: int, numbers: Sequence[int], lines: Sequence[str], rewrite: bool,
                             then: Callable[[], None] | None) -> None:
        """:meth:`_take` in slices of about :data:`~.log_search.SLICE_S` of work, yielding between them;
        lines to show are written to the Log widget a chunk's worth at a time, inside the slice."""
        end, total, i = self._pending, min(len(numbers), len(lines)), 0
        while i < total:
            if gen != self._gen:
                return  # a newer search (or a new log) took over
            t0 = time.perf_counter()
            shown: list[tuple[int, str]] = []
            while i < total and time.perf_counter() - t0 < SLICE_S:
                nums, chunk = numbers[i:i + CHUNK], lines[i:i + CHUNK]
                i += CHUNK
                if rewrite:
                    shown.extend(self._through(list(zip(nums, chunk, strict=False))))
                    if len(shown) >= CHUNK or i >= total:  # showing costs more than matching: inside the slice
                        self.log_view.add(shown)
                        shown = []
                elif self.search_query is not None:
                    self.hits.extend(scan(nums, chunk, self.search_query))
            if shown:
                self.log_view.add(shown)
            await asyncio.sleep(0)
        if gen != self._gen:
            return
        if rewrite and end is not None:  # what arrived meanwhile (feed kept it out of the view)
            first, now = self.history()
            start = max(0, end + 1 - first)
            self._show([(first + i, t) for i, t in enumerate(now[start:], start)])
        self._done(then)

    def _done(self, then: Callable[[], None] | None) -> None:
        self._pending = None
        self.hits.sort()
        self._prune_hits()
        log = self.log_view
        if self.following:
            log.scroll_end(animate=False, immediate=True)
        if then is not None:
            then()
        self._title()
        self.tick()

    # -- moving between matches ---------------------------------------------------------------------
    def _visible_numbers(self) -> tuple[int, int] | None:
        log = self.log_view
        if not log.numbers:
            return None
        top = min(int(log.scroll_offset.y), len(log.numbers) - 1)
        bottom = min(top + max(1, log.size.height) - 1, len(log.numbers) - 1)
        return log.numbers[top], log.numbers[bottom]

    def _first_jump(self) -> None:
        if not self.hits:
            text = self.search_query.text if self.search_query is not None else ""
            self.app.notify(f"no line matches {text!r} (yet): n jumps once one arrives; esc follows again", timeout=5, markup=False)
            return
        seen = self._visible_numbers()
        i = bisect.bisect_left(self.hits, seen[0]) if seen else 0
        self._goto(self.hits[i % len(self.hits)])

    def next_match(self, *, backwards: bool = False) -> int | None:
        """``n``/``N``: the next (previous) matching line, wrapping; pauses following."""
        if self.search_query is None:
            self.app.notify("no search: s marks matches, / filters; then n / N", timeout=4, markup=False)
            return None
        if self._pending is not None:
            self.app.notify("still searching…", timeout=2, markup=False)
            return None
        hits = self.hits
        if not hits:
            self.app.notify(f"no line matches {self.search_query.text!r}", timeout=3, markup=False)
            return None
        cur = self.log_view.current
        seen = self._visible_numbers()
        if backwards:
            ref = cur if cur is not None else (seen[1] + 1 if seen else hits[-1] + 1)
            i = bisect.bisect_left(hits, ref) - 1
            if i < 0:
                i = len(hits) - 1
                self.app.notify("search hit TOP, continuing at BOTTOM", timeout=2, markup=False)
        else:
            ref = cur if cur is not None else (seen[0] - 1 if seen else hits[0] - 1)
            i = bisect.bisect_right(hits, ref)
            if i >= len(hits):
                i = 0
                self.app.notify("search hit BOTTOM, continuing at TOP", timeout=2, markup=False)
        self._goto(hits[i])
        return hits[i]

    def _goto(self, line_no: int) -> None:
        log = self.log_view
        row = log.row_of(line_no)
        if row is None:
            return
        self.set_following(False)
        log.current = line_no
        log.scroll_to(y=max(0, row - max(1, log.size.height) // 3), animate=False, immediate=True)
        log.refresh()
        self._title()
        self.tick()

    def count_text(self) -> str:
        """``3/17`` (the current match of all), ``–/17`` off a match, ``searching…`` while a chunked search runs."""
        if self.search_query is None:
            return ""
        if self._pending is not None:
            return "searching…"
        cur = self.log_view.current
        i = bisect.bisect_left(self.hits, cur) if cur is not None else len(self.hits)
        at = str(i + 1) if i < len(self.hits) and self.hits[i] == cur else "–"
        return f"{at}/{len(self.hits)}"

    # -- Esc ------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_filter":  # escape is ours only while the prompt is open or a search is on (else: un-zoom)
            return self.prompt_open or self.search_query is not None
        return True

    def action_cancel_filter(self) -> None:
        if self.prompt_open:
            self.close_prompt()
        elif self.search_query is not None:
            self.clear_search(resume=True)
