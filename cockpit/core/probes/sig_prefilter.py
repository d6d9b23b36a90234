"""The classifier's prefilter: one compiled alternation of literal keywords.

Almost every line of a training log matches nothing.  Each signature contributes one (or a few)
literal keywords that any line it matches must contain; the classifier first runs one regex made of
all of them (factored as a trie) and only lines that hit a keyword go through the signatures' own
regexes.  :data:`STRUCT_KEYWORDS` add the traceback structure (headers, chain markers).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from .sig_model import Signature

__all__ = ["STRUCT_KEYWORDS", "build_prefilter", "min_keywords", "trie_regex"]

_Trie = dict[str, "_Trie"]

#: Substrings of the lines that open or continue a traceback: they always take the slow path.
STRUCT_KEYWORDS = ("Traceback (most recent", "Exception in thread", "Exception ignored", "above exception")


def build_prefilter(signatures: Iterable[Signature]) -> Callable[[str], re.Match[str] | None]:
    """The ``search`` of one regex that hits every line a signature (or the structure) may match."""
    sigs = tuple(signatures)
    cs = min_keywords(k for s in sigs if not s.ignore_case for k in s.keywords)
    ci = min_keywords(k.lower() for s in sigs if s.ignore_case for k in s.keywords)
    cs = min_keywords(list(cs) + list(STRUCT_KEYWORDS))
    pattern = trie_regex(cs)
    if ci:
        pattern += "|(?i:" + trie_regex(ci) + ")"
    return re.compile(pattern).search


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
