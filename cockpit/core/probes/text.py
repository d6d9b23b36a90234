"""Small text helpers shared by the probes and the UI: decoding remote output, compact ages.

Nothing here imports textual or rich; the UI's own age format (``cockpit.ui.format.fmt_age``) is
:func:`fmt_age` with ``coarse=True``.
"""

from __future__ import annotations

import math

from ..text import sanitize

__all__ = ["to_text", "fmt_age", "fmt_secs"]


def to_text(data: str | bytes | bytearray | memoryview | None) -> str:
    """Remote output as text the probes' parsers can keep: ``None`` is empty, bytes are UTF-8 with
    invalid bytes replaced, and it is sanitised (:func:`cockpit.core.text.sanitize`, newlines
    kept), so process command lines, GPU and process names and kernel messages carry no control
    character into cockpit's data.  Escape sequences are shown (``␛[31m``), not removed: one cut
    short in a field must not swallow the fields after it."""
    if data is None:
        return ""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data).decode("utf-8", "replace")
    return sanitize(str(data), newlines=True, strip_escapes=False)


#: (seconds in the unit, its letter, seconds in the next smaller unit, that unit's letter)
_AGE_UNITS = ((86400, "d", 3600, "h"), (3600, "h", 60, "m"), (60, "m", 1, "s"))


def fmt_age(seconds: float | None, *, coarse: bool = False, missing: str = "?") -> str:
    """A compact age: ``45s``, ``17m07s``, ``2h03m``, ``3d04h``.

    ``coarse``: the largest unit only (``45s``, ``17m``, ``2h``, ``3d``).  Negative ages read
    ``0s``; ``None`` and NaN read ``missing``.
    """
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return missing
    s = int(max(0, seconds))
    for size, unit, sub, sub_unit in _AGE_UNITS:
        if s >= size:
            head = f"{s // size}{unit}"
            return head if coarse else f"{head}{s % size // sub:02d}{sub_unit}"
    return f"{s}s"


def fmt_secs(s: float | None) -> str:
    """``4.2s`` under a minute (a death's timing wants the tenth), else :func:`fmt_age` (``4m12s``,
    ``2h03m``, ``3d04h``)."""
    if s is None:
        return "?"
    s = max(0.0, s)
    return f"{s:.1f}s" if s < 60 else fmt_age(s)
