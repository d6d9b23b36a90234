"""The classifier's prefilter: one compiled alternation of literal keywords.

Almost every line of a training log matches nothing.  Each signature contributes one (or a few)
literal keywords that any line it matches must contain; the classifier first runs one regex made of
all of them (factored as a trie) and only lines that hit a keyword go through the signatures' own
regexes.  :data:`STRUCT_KEYWORDS` add the traceback structure (headers, chain markers).

Python's ``re`` runs an alternation of ~70 words at ~35 ns a character (~4 µs for a step line), so
:class:`Prefilter` first looks a line's *shape* up: its UTF-8 bytes with the ASCII digits deleted.
Deleting digits keeps substrings (a line that contains a keyword has a shape that contains the
keyword without its digits), so a shape that contains none of the digitless keywords proves every
line of that shape clean.  A training log repeats a few shapes (``step | loss . | lr .e- …``): one
``translate`` and a set look-up a line (~0.3 µs), and :meth:`Prefilter.all_clean` does a whole batch
at once.  Case-insensitive keywords (a user's signature) turn the shape cache off.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

from .sig_model import Signature

__all__ = ["STRUCT_KEYWORDS", "Prefilter", "build_prefilter", "min_keywords", "trie_regex"]

_Trie = dict[str, "_Trie"]

#: Substrings of the lines that open or continue a traceback: they always take the slow path.
STRUCT_KEYWORDS = ("Traceback (most recent", "Exception in thread", "Exception ignored", "above exception")


_DIGITS = b"0123456789"
#: shapes remembered as clean; the set is emptied when it reaches this size (a log of ever new shapes)
SHAPES_MAX = 4096


class Prefilter:
    """``prefilter(line)``: False when ``line`` matches no keyword (proved), True when it may."""

    __slots__ = ("search", "_shape_search", "clean")

    def __init__(self, search: Callable[[str], re.Match[str] | None],
                 shape_search: Callable[[bytes], re.Match[bytes] | None] | None) -> None:
        self.search = search
        self._shape_search = shape_search
        self.clean: set[bytes] = set()  # shapes that contain no keyword

    def __call__(self, line: str) -> bool:
        if self._shape_search is None:
            return self.search(line) is not None
        shape = line.encode("utf-8", "surrogatepass").translate(None, _DIGITS)
        if shape in self.clean:
            return False
        if self._shape_search(shape) is None:
            if len(self.clean) >= SHAPES_MAX:
                self.clean.clear()
            self.clean.add(shape)
            return False
        return self.search(line) is not None

    def shapes(self, lines: list[str]) -> list[bytes] | None:
        """The shape of each line of a batch in one pass in C (None: no shape cache here, or a line
        with a newline in it); a shape in :attr:`clean` proves its line clean."""
        if self._shape_search is None:
            return None
        shapes = "\n".join(lines).encode("utf-8", "surrogatepass").translate(None, _DIGITS).split(b"\n")
        return shapes if len(shapes) == len(lines) else None


def build_prefilter(signatures: Iterable[Signature]) -> Prefilter:
    """A :class:`Prefilter` for every line a signature (or the structure) may match (its own shape
    cache; the compiled regexes are shared by every prefilter of the same keywords)."""
    sigs = tuple(signatures)
    cs = tuple(k for s in sigs if not s.ignore_case for k in s.keywords)
    ci = tuple(k.lower() for s in sigs if s.ignore_case for k in s.keywords)
    search, shape_search = _compiled(cs, ci)
    return Prefilter(search, shape_search)


@functools.lru_cache(maxsize=16)
def _compiled(cs_words: tuple[str, ...], ci_words: tuple[str, ...]) -> tuple[Callable[[str], re.Match[str] | None],
                                                                             Callable[[bytes], re.Match[bytes] | None] | None]:
    """The prefilter's searches for these keywords: built once (a classifier is made for every
    attempt's log scan, and the trie of ~70 keywords costs milliseconds to factor and compile)."""
    ci = min_keywords(ci_words)
    cs = min_keywords(min_keywords(cs_words) + list(STRUCT_KEYWORDS))
    pattern = trie_regex(cs)
    if ci:
        pattern += "|(?i:" + trie_regex(ci) + ")"
    # each byte as one latin-1 character: the str helpers build the bytes pattern
    shapes = [k.encode("utf-8", "surrogatepass").translate(None, _DIGITS).decode("latin-1") for k in cs]
    shape_search = None
    if not ci and shapes and all(shapes):  # a keyword of digits only would hit every shape
        shape_search = re.compile(trie_regex(min_keywords(shapes)).encode("latin-1")).search
    return re.compile(pattern).search, shape_search


def min_keywords(words: Iterable[str]) -> list[str]:
    """Drop keywords that contain another keyword (the shorter one already triggers)."""
    uniq = sorted(set(w for w in words if w), key=len)
    out: list[str] = []
    for w in uniq:
        if not any(o in w for o in out):
            out.append(w)
    return out


def trie_regex(words: Iterable[str]) -> str:
    """An alternation of literal ``words`` with shared prefixes factored out.

    Python's ``re`` tries every branch of a flat alternation at every position; factored as a
    trie, one branch per first character survives, which makes the prefilter about twice as
    fast on ordinary lines.  Words that extend a shorter word are dropped (the shorter one
    already triggers).
    """
    trie: _Trie = {}
    for w in words:
        if not w:
            continue
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: _Trie) -> str:
        if "" in node:
            return ""
        alts: list[str] = []
        leaves: list[str] = []
        for ch, sub in sorted(node.items()):
            rest = build(sub)
            if rest:
                alts.append(re.escape(ch) + rest)
            else:
                leaves.append(ch)
        if len(leaves) == 1:
            alts.append(re.escape(leaves[0]))
        elif leaves:
            alts.append("[" + "".join(re.escape(c) for c in leaves) + "]")
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return build(trie) if trie else ""
