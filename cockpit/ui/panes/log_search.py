"""Searching the log like a pager: the query, its matching, context lines and the highlighter.

A query is what the person typed in the log pane's prompt.  Options come first, grep-style, each
followed by a space; the rest is the text to find:

* ``-r`` (or ``-E``): the text is a regular expression (Python ``re`` syntax); ``-F``: a literal
  text (the default);
* ``-s``: case-sensitive; ``-i``: ignore case (the default);
* ``-C N`` (or ``-CN``): when filtering, show N lines of context around each matching line;
* ``--``: the end of the options (to search for a text that starts with ``-r``…).

``ctrl+r`` and ``ctrl+s`` toggle ``-r`` and ``-s`` in the prompt (or in the active search), so the
query text always says how it is matched.  A regex that does not compile raises
:class:`QueryError` with a message a person can act on; nothing here ever raises anything else.

Matching a large ring (``[ui] log_lines`` of 200,000) is done in chunks of :data:`CHUNK` lines
(:func:`scan`, :class:`ContextFilter`) so the caller can yield to the event loop every
:data:`SLICE_S`.  A regex is tried only on lines holding one of the literal texts every match
contains (derived by the core's signature prefilter), so a rare regex costs about as much as a
substring test.  Everything here is
pure Python on strings; the pane (:mod:`.log`) owns the widgets.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.highlighter import Highlighter
from rich.style import Style
from rich.text import Text

from ...core.probes.sig_model import derive_keywords

__all__ = ["Query", "QueryError", "parse_query", "format_query", "toggle_option", "ContextFilter", "scan",
           "SearchHighlighter", "CHUNK", "SLICE_S"]

#: lines matched per step of a chunked scan (then the clock is read)
CHUNK = 1024
#: a chunked scan yields to the event loop once it has worked this long (keys and repaints wait at most this)
SLICE_S = 0.008
#: the most context lines ``-C`` takes (more would be the whole log)
MAX_CONTEXT = 50

_CONTEXT = re.compile(r"-C(\d*)$")


class QueryError(ValueError):
    """A query that cannot be used (a regex that does not compile, a bad ``-C``): ``str()`` says why and what to do."""


@dataclass(frozen=True)
class Query:
    """One parsed query.  ``text`` is what was typed (options included), ``pattern`` the text to find."""

    text: str
    pattern: str
    regex: bool = False
    case: bool = False  # case-sensitive
    context: int = 0
    rx: re.Pattern[str] | None = None
    keywords: tuple[str, ...] | None = None  # a regex's literal texts, one of which every match contains

    @property
    def matcher(self) -> Callable[[str], bool]:
        """A fast ``line → bool`` for this query: a substring test where the query allows it, and for a
        regex, the literal text every match contains (the core's signature prefilter,
        :func:`~cockpit.core.probes.sig_model.derive_keywords`) before the regex runs."""
        needle, kws, fold = self.pattern, self.keywords, self.folds
        if not self.regex:
            if self.case:
                return lambda line: needle in line
            low = needle.lower()
            return lambda line: low in line.lower()
        assert self.rx is not None
        search = self.rx.search
        if not kws:
            return lambda line: search(line) is not None
        if len(kws) == 1:
            kw = kws[0]
            if fold:
                return lambda line: kw in line.lower() and search(line) is not None
            return lambda line: kw in line and search(line) is not None
        if fold:
            return lambda line: any(k in line.lower() for k in kws) and search(line) is not None
        return lambda line: any(k in line for k in kws) and search(line) is not None

    @property
    def folds(self) -> bool:
        """Whether case is ignored (``-i``, the default, or a regex's own ``(?i)``)."""
        return self.rx is not None and bool(self.rx.flags & re.IGNORECASE)

    def spans(self, line: str) -> list[tuple[int, int]]:
        """Where the query matches in ``line`` (non-empty spans, in order)."""
        rx = self.rx
        if rx is None:
            return []
        return [(m.start(), m.end()) for m in rx.finditer(line) if m.end() > m.start()]

    def describe(self) -> str:
        """``regex, case-sensitive, 3 lines of context``: the options in words."""
        bits = ["regex" if self.regex else "literal", "case-sensitive" if self.case else "ignore case"]
        if self.context:
            bits.append(f"{self.context} line{'s' if self.context != 1 else ''} of context")
        return ", ".join(bits)


def _split(text: str) -> tuple[dict[str, object], str]:
    """The options at the front of ``text`` and the pattern after them."""
    opts: dict[str, object] = {}
    rest = text.lstrip()
    while rest.startswith("-"):
        head, sep, tail = rest.partition(" ")
        if head == "--":
            return opts, tail
        if head in ("-r", "-E"):
            opts["regex"] = True
        elif head == "-F":
            opts["regex"] = False
        elif head == "-s":
            opts["case"] = True
        elif head == "-i":
            opts["case"] = False
        elif (m := _CONTEXT.match(head)) is not None:
            num = m.group(1)
            if not num:  # "-C 3"
                num, _, tail = tail.lstrip(" ").partition(" ")
                if not num.isdigit():
                    raise QueryError(f"-C needs a number of context lines (e.g. -C 3), got {num or 'nothing'!r}")
            n = int(num)
            if n > MAX_CONTEXT:
                raise QueryError(f"-C {n}: at most {MAX_CONTEXT} lines of context")
            opts["context"] = n
        else:
            break  # not an option: the pattern starts here ("-0.5", "--lr")
        if not sep:
            return opts, ""
        rest = tail.lstrip(" ")
    return opts, rest


def parse_query(text: str) -> Query | None:
    """The query for ``text``; None when there is nothing to search for.  Raises :class:`QueryError`."""
    text = text.strip()
    opts, pattern = _split(text)
    if not pattern:
        return None
    regex, case = bool(opts.get("regex", False)), bool(opts.get("case", False))
    flags = 0 if case else re.IGNORECASE
    try:
        rx = re.compile(pattern if regex else re.escape(pattern), flags)
    except re.error as e:
        where = f" at position {e.pos}" if e.pos is not None else ""
        raise QueryError(f"bad regex {pattern!r}: {e.msg}{where} (remove -r to search for the text as it is)") from None
    context = opts.get("context", 0)
    kws = derive_keywords(pattern, rx.flags & re.IGNORECASE) if regex else None
    return Query(text, pattern, regex, case, context if isinstance(context, int) else 0, rx, kws or None)


def format_query(pattern: str, *, regex: bool = False, case: bool = False, context: int = 0) -> str:
    """The canonical text for a query (options first, ``--`` when the pattern itself starts like an option)."""
    head = (["-r"] if regex else []) + (["-s"] if case else []) + ([f"-C {context}"] if context else [])
    if pattern.startswith("-"):
        opts, rest = _split_safe(pattern)
        if opts or rest != pattern:
            head.append("--")
    return " ".join(head + [pattern]) if head else pattern


def _split_safe(text: str) -> tuple[dict[str, object], str]:
    try:
        return _split(text)
    except QueryError:
        return {"bad": True}, ""


def toggle_option(text: str, option: str) -> str:
    """``text`` with ``-r`` (regex) or ``-s`` (case-sensitive) switched; the pattern is kept as typed."""
    opts, pattern = _split_safe(text)
    if opts.get("bad"):
        opts, pattern = {}, text.strip()
    regex, case = bool(opts.get("regex", False)), bool(opts.get("case", False))
    if option == "-r":
        regex = not regex
    elif option == "-s":
        case = not case
    else:
        raise ValueError(f"unknown search option {option!r}")
    ctx = opts.get("context", 0)
    return format_query(pattern, regex=regex, case=case, context=ctx if isinstance(ctx, int) else 0)


# -- matching -----------------------------------------------------------------------------------

def scan(numbers: Sequence[int], lines: Sequence[str], query: Query) -> list[int]:
    """The numbers of the lines that match.  The common cases are inlined (no call per line)."""
    pairs = zip(numbers, lines, strict=False)
    if not query.regex:
        needle = query.pattern
        if query.case:
            return [n for n, t in pairs if needle in t]
        low = needle.lower()
        return [n for n, t in pairs if low in t.lower()]
    assert query.rx is not None
    search, kws = query.rx.search, query.keywords
    if kws and len(kws) == 1:
        kw = kws[0]
        if query.folds:
            return [n for n, t in pairs if kw in t.lower() and search(t)]
        return [n for n, t in pairs if kw in t and search(t)]
    if not kws:
        return [n for n, t in pairs if search(t)]
    m = query.matcher
    return [n for n, t in pairs if m(t)]


class ContextFilter:
    """The lines a filter shows: each matching line, with ``context`` lines before and after it.

    Fed in order, batch by batch (the live log), it keeps what the next batch needs: the last
    ``context`` lines not shown (the next match's "before") and how many "after" lines are due.
    """

    def __init__(self, query: Query) -> None:
        self.query = query
        self.context = query.context
        self._match = query.matcher
        self._before: deque[tuple[int, str]] = deque(maxlen=max(1, self.context))
        self._after = 0

    def feed(self, numbered: Sequence[tuple[int, str]]) -> tuple[list[tuple[int, str]], list[int]]:
        """(lines to show, numbers of the matching ones) for the next lines of the log."""
        match, c = self._match, self.context
        shown: list[tuple[int, str]]
        if not c:
            shown = [(n, t) for n, t in numbered if match(t)]
            return shown, [n for n, _ in shown]
        shown = []
        hits: list[int] = []
        before = self._before
        for n, t in numbered:
            if match(t):
                shown.extend(before)
                before.clear()
                shown.append((n, t))
                hits.append(n)
                self._after = c
            elif self._after > 0:
                shown.append((n, t))
                self._after -= 1
            else:
                before.append((n, t))
        return shown, hits


# -- drawing --------------------------------------------------------------------------------------

class SearchHighlighter(Highlighter):
    """Marks the query's matches in a rendered log line; dims the context lines of a filter."""

    def __init__(self) -> None:
        self.query: Query | None = None
        self.match_style = Style(bold=True, underline=True)
        self.context_style: Style | None = None  # set while a filter shows context lines

    def highlight(self, text: Text) -> None:
        q = self.query
        if q is None:
            return
        spans = q.spans(text.plain)
        if not spans:
            if self.context_style is not None:
                text.stylize(self.context_style)
            return
        for start, end in spans:
            text.stylize(self.match_style, start, end)
