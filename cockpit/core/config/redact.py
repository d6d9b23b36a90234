"""``[redact]``: what else to hide, as config (a helper of :mod:`cockpit.core.config`; the rules
themselves are :mod:`cockpit.core.redact`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..redact import pattern_problem

__all__ = ["RedactConfig"]


def _patterns(v: Any) -> str | None:
    """Each entry a usable regular expression (named by its index: the message says which)."""
    for i, p in enumerate(v):
        why = pattern_problem(p)
        if why:
            return f"has [{i}] {p!r}, which {why}"
    return None


@dataclass
class RedactConfig:
    patterns: list[str] = dataclasses.field(default_factory=list, metadata={
        "doc": "Python regular expressions for secrets of your own (e.g. \"corp-[0-9a-f]{32}\"), replaced by *** in the journal, "
               "diffs, exports and --share screens; a group named secret hides only that part.", "choices": None, "check": _patterns})
    builtin: bool = dataclasses.field(default=True, metadata={
        "doc": "Also hide well-known secret shapes (hf_ tokens, AWS keys, Bearer tokens, NAME=value for TOKEN/SECRET/PASSWORD/"
               "API_KEY names, URL passwords, PEM keys); false if one hides evidence you need. [job.env] secrets and "
               "patterns are always hidden.", "choices": None, "check": None})
