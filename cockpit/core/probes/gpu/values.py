"""Missing values that are values: :class:`NaType`, :data:`NA`, and :func:`parse_value`.

nvidia-smi prints ``[N/A]``, ``[Not Supported]``, ``[Insufficient Permissions]`` (and sometimes
worse) where a number should be.  :func:`parse_value` turns each into an :class:`NaType` that keeps
the reason: ``N/A`` in text, ``nan`` in arithmetic, falsy, never raising.
"""

from __future__ import annotations

import math
import re
from typing import Any, TypeGuard

__all__ = ["NaType", "NA", "is_na", "parse_value"]


class NaType:
    """A missing value that keeps why it is missing.

    ``str()`` is ``"N/A"``; ``float()`` and arithmetic with numbers give ``nan``; it is falsy;
    ordering comparisons are always ``False`` (as with ``nan``) and never raise; every NA equals
    every other NA (the reason is not part of equality).  ``format(na, ">7.1f")`` gives a padded
    ``"N/A"``, so tables can format numbers and NAs alike.
    """

    __slots__ = ("reason",)

    def __init__(self, reason: str = "[N/A]") -> None:
        self.reason = reason

    def __str__(self) -> str:
        return "N/A"

    def __repr__(self) -> str:
        return f"NA({self.reason!r})"

    def __format__(self, spec: str) -> str:
        m = re.match(r"(?P<fa>(?:.?[<>=^])?)[+\- ]?z?#?0?(?P<w>\d*)", spec or "")
        align = m.group("fa") if m else ""
        width = m.group("w") if m else ""
        if align.endswith("=") or (not align and width):
            align = align[:-1] + ">" if align else ">"
        try:
            return format("N/A", f"{align}{width}")
        except ValueError:
            return "N/A"

    def __bool__(self) -> bool:
        return False

    def __float__(self) -> float:
        return math.nan

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NaType)

    def __ne__(self, other: object) -> bool:
        return not isinstance(other, NaType)

    def __hash__(self) -> int:
        return hash("N/A")

    def __lt__(self, other: object) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def _arith(self, other: object) -> Any:
        if isinstance(other, (int, float, NaType)):
            return math.nan
        return NotImplemented

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arith
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _arith
    __pow__ = __rpow__ = _arith

    def __neg__(self) -> float:
        return math.nan

    __pos__ = __abs__ = __neg__

    def __round__(self, ndigits: int | None = None) -> NaType:
        return self

    def __reduce__(self) -> tuple[type[NaType], tuple[str]]:
        return (NaType, (self.reason,))


#: The plain missing value (reason ``[N/A]``).
NA = NaType("[N/A]")


def is_na(value: object) -> TypeGuard[NaType]:
    """Whether ``value`` is a missing value (any :class:`NaType`)."""
    return isinstance(value, NaType)


_BRACKETED = re.compile(r"\[[^\]]*\]\Z")


def parse_value(text: str | None, kind: type = str) -> int | float | str | NaType:
    """One field of nvidia-smi's csv output: ``int``, ``float`` or ``str``; NA when missing."""
    if text is None:
        return NaType("missing")
    t = text.strip()
    if not t:
        return NaType("missing")
    if _BRACKETED.match(t):
        return NaType(t)
    if t in ("N/A", "Not Supported", "Unknown Error"):
        return NaType(f"[{t}]")
    if kind is str:
        return t
    try:
        if kind is int:
            try:
                return int(t)
            except ValueError:
                f = float(t)
                if math.isfinite(f):
                    return int(f)
                raise
        v = float(t)
        if math.isnan(v):
            return NaType(f"unparseable: {t[:40]!r}")
        return v
    except ValueError:
        return NaType(f"unparseable: {t[:40]!r}")
