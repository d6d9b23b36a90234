"""A log line's *shape*, and templates that read every line of one shape with one simple match.

A training loop prints the same line again and again with other numbers in it: ``step 120 | loss
1.8312 | lr 3.000e-04 …``.  The metric parser's forms (:mod:`.parse`) are general regexes that
try a key at every position (~10 µs for such a line in Python's ``re``).  Two lines that differ
only in their digits are read the same way, so the parser learns a line's *template* once and reads
the next lines of that shape with it:

* the **shape** is the line's UTF-8 bytes with the ASCII digits deleted (one ``translate`` in C,
  as :mod:`cockpit.core.probes.sig_prefilter` does for the classifier); it keys the cache;
* the **template** is a regex made of the line's own text, each run of ASCII digits replaced by
  ``[0-9]+``, and the parts the parser took (a key, a value, a total) as capture groups.  A line
  the template matches whole has the same characters as the first one except its digit runs, each
  still one run of one or more digits in the same place, so the general regexes would have
  matched it in the same places: they tell a digit from another character but never one digit
  from another, and never a run's length, except in one place, the key's bound of 48 characters.
  A run inside a word that starts a key (a letter or ``_`` not preceded by a word character) must
  therefore keep its length: ``[0-9]{n}``.  What depends on the values themselves (a step that
  is ``1e999``, a duplicate key with digits in it) is decided again on every line by the caller.

A line the template does not match (other digit lengths in a key word, the same shape by
accident) is read by the general forms, and its template replaces the old one.  A shape is
templated the second time it is seen, so a log of ever new lines pays one ``translate`` and a set
look-up a line, not a template each.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["shape", "template", "ShapeCache", "SHAPES_MAX"]

_DIGITS = b"0123456789"
_RUN = re.compile(r"[0-9]+")
#: a word as the key regex sees it; a key starts at a word's first character, a letter or ``_``
_WORD = re.compile(r"[\w./-]+")
_KEY_START = re.compile(r"[A-Za-z_]")
#: shapes (and templates) remembered; the cache is emptied when it reaches this size
SHAPES_MAX = 4096

T = TypeVar("T")


def shape(line: str) -> bytes:
    """``line``'s shape: its UTF-8 bytes without the ASCII digits."""
    return line.encode("utf-8", "surrogatepass").translate(None, _DIGITS)


def template(line: str, spans: list[tuple[int, int]]) -> re.Pattern[str] | None:
    """A regex that matches whole the lines that differ from ``line`` only in its ASCII digit runs
    (see the module doc), capturing ``spans`` (in order, not overlapping) as its groups; None
    when a span cuts a digit run."""
    exact: set[int] = set()
    for w in _WORD.finditer(line):
        if _KEY_START.match(w.group()) and any(c.isdigit() for c in w.group()):
            exact.update(r.start() for r in _RUN.finditer(line, w.start(), w.end()))
    runs = [(r.start(), r.end()) for r in _RUN.finditer(line)]

    def part(a: int, b: int) -> str:
        out: list[str] = []
        pos = a
        for s, e in runs:
            if e <= a or s >= b:
                continue
            out.append(re.escape(line[pos:s]))
            out.append(f"[0-9]{{{e - s}}}" if s in exact else "[0-9]+")
            pos = e
        out.append(re.escape(line[pos:b]))
        return "".join(out)

    if any(s < a < e or s < b < e for s, e in runs for a, b in spans):
        return None
    pieces: list[str] = []
    pos = 0
    for a, b in spans:
        if a < pos:
            return None
        pieces.append(part(pos, a))
        pieces.append("(" + part(a, b) + ")")
        pos = b
    pieces.append(part(pos, len(line)))
    return re.compile("".join(pieces))


class ShapeCache(Generic[T]):
    """Templates by shape: :meth:`get` the one of a line's shape, :meth:`learn` a shape's new one
    (the second time the shape is seen: a shape seen once is only remembered)."""

    __slots__ = ("_make", "_forms", "_once")

    def __init__(self, make: Callable[[str], T | None]) -> None:
        self._make = make
        self._forms: dict[bytes, T] = {}
        self._once: set[bytes] = set()

    def get(self, key: bytes) -> T | None:
        return self._forms.get(key)

    def learn(self, key: bytes, line: str) -> None:
        if key not in self._once and key not in self._forms:
            if len(self._once) >= SHAPES_MAX:
                self._once.clear()
            self._once.add(key)
            return
        form = self._make(line)
        if form is None:
            return
        if len(self._forms) >= SHAPES_MAX:
            self._forms.clear()
        self._forms[key] = form
