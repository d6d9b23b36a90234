"""Plain presentation helpers: glyphs, labels, ages, sizes, link states.

No widgets here and no colours: colours come from the theme through component classes (see
``styles.tcss``).  Every status, outcome and layer has a *glyph or label* as well as a colour, so
nothing is told by colour alone (colour-blind viewers, washed-out projectors, 16-colour terminals).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from enum import Enum
from typing import Any

from ..core.layers import Layer, Outcome, Status
from ..core.probes.gpu import NaType
from ..core.probes.text import fmt_age as core_fmt_age
from ..core.render import OUTCOME_GLYPH, OUTCOME_MEANING, STATUS_GLYPH
from ..core.text import sanitize
from .shown import shown

__all__ = [
    "STATUS_GLYPH",
    "OUTCOME_GLYPH",
    "LAYER_NAMES",
    "status_glyph",
    "outcome_text",
    "outcome_word",
    "fmt_age",
    "fmt_elapsed",
    "fmt_kib",
    "fmt_mib",
    "fmt_na",
    "fmt_clock",
    "code_version_text",
    "first_error_text",
    "is_stale",
    "link_states",
    "one_line",
    "spark",
]

_BARS = "▁▂▃▄▅▆▇█"


def spark(values: Iterable[float], width: int, *, top: float = 100.0) -> str:
    """A sparkline of the last ``width`` values on a *fixed* 0…``top`` scale (a flat 0 % stays a
    low line, never a full bar); missing history is blank, not invented."""
    if width <= 0:
        return ""
    vals = list(values)[-width:]
    out = []
    for v in vals:
        frac = 0.0 if top <= 0 else min(1.0, max(0.0, v / top))
        out.append(_BARS[min(len(_BARS) - 1, int(frac * (len(_BARS) - 1) + 0.5))])
    return " " * (max(0, width) - len(out)) + "".join(out)

LAYER_NAMES = [layer.value for layer in Layer]


def _v(x: Enum | str | None) -> str:
    return "" if x is None else str(x.value) if isinstance(x, Enum) else str(x)  # str(): a journal value may be any JSON


def status_glyph(status: Status | str) -> str:
    return STATUS_GLYPH.get(_v(status), "?")


def outcome_word(outcome: Outcome | str | None) -> str:
    return _v(outcome).upper() or "—"


def outcome_text(outcome: Outcome | str | None, layer: Layer | str | None = None, *, short: bool = False) -> str:
    """``✘ FAILED — the code ran and failed (app)`` / ``⊘ UNTESTED — the fix never ran (ssh)``.

    ``short``: only glyph, word and layer (``✘ FAILED app``), for table cells.
    """
    o, lay = _v(outcome), _v(layer)
    glyph = OUTCOME_GLYPH.get(o, "?")
    word = outcome_word(o)
    if short:
        return f"{glyph} {word}" + (f" {lay}" if lay and o in ("failed", "untested") else "")
    rest = OUTCOME_MEANING.get(o, "unknown outcome")
    tag = f" ({lay})" if lay and o in ("failed", "untested") else ""
    return f"{glyph} {word} — {rest}{tag}"


def one_line(text: object, limit: int | None = None) -> str:
    """Remote text on one line (``⏎`` between its lines), as it may be shown (:func:`~.shown.shown`:
    no escapes; secrets hidden when sharing), then shortened to ``limit``."""
    lines = sanitize(str(text or ""), newlines=True).split("\n")  # control characters show (␞, \u2028), even at an end
    s = shown(" ⏎ ".join(p.strip() for p in lines if p.strip()))
    if limit is not None and len(s) > limit:
        s = s[: max(0, limit - 1)] + "…"
    return s


def fmt_age(age: float | None) -> str:
    """A compact age: ``0s``, ``42s``, ``3m``, ``2h``, ``5d``; ``—`` for never (the core's
    :func:`~cockpit.core.probes.text.fmt_age`, largest unit only)."""
    return core_fmt_age(age, coarse=True, missing="—")


def fmt_elapsed(seconds: Any) -> str:  # Any: a probe's value (number, text or NA)
    """Process elapsed time like ps: ``05:03``, ``1:02:03``, ``3-04:05:06``."""
    try:
        s = int(seconds)
    except (TypeError, ValueError):
        return "?"
    d, s = divmod(max(0, s), 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}-{h:02}:{m:02}:{s:02}"
    if h:
        return f"{h}:{m:02}:{s:02}"
    return f"{m:02}:{s:02}"


def fmt_kib(kib: Any) -> str:  # Any: a probe's value
    try:
        v = float(kib)
    except (TypeError, ValueError):
        return str(kib)
    for unit in ("K", "M", "G", "T"):
        if v < 1024 or unit == "T":
            return f"{v:.0f}{unit}" if v >= 10 or unit == "K" else f"{v:.1f}{unit}"
        v /= 1024
    return f"{v:.0f}T"  # pragma: no cover


def fmt_na(value: Any, spec: str = "", unit: str = "") -> str:  # Any: a probe's value
    """Format a number that may be an NA value (``NaType`` prints ``N/A`` and formats padded)."""
    if value is None or isinstance(value, NaType):
        return "N/A"
    try:
        return f"{value:{spec}}{unit}"
    except (TypeError, ValueError):
        return f"{value}{unit}"


def fmt_mib(mib: Any) -> str:  # Any: a probe's value
    if mib is None or isinstance(mib, NaType):
        return "N/A"
    try:
        v = float(mib)
    except (TypeError, ValueError):
        return str(mib)
    return f"{v / 1024:.1f}G" if v >= 1024 else f"{v:.0f}M"


def fmt_clock(ts: float | None, now: float | None = None) -> str:
    """``14:03:07`` today, ``06-02 14:03`` another day; ``—`` for none."""
    if not ts:
        return "—"
    now = time.time() if now is None else now
    lt, ln = time.localtime(ts), time.localtime(now)
    if (lt.tm_year, lt.tm_yday) == (ln.tm_year, ln.tm_yday):
        return time.strftime("%H:%M:%S", lt)
    return time.strftime("%m-%d %H:%M", lt)


def code_version_text(cv: dict[str, Any] | None) -> str:  # Any: the journal's JSON
    if not cv:
        return "—"
    commit = cv.get("git_commit")
    if not commit:
        return "no git" + (" (dirty)" if cv.get("dirty") else "")
    s = str(commit)[:7]
    if cv.get("dirty"):
        s += "+" + (str(cv.get("dirty_hash") or "dirty")[:6])
    return s


def first_error_text(fe: Any) -> str:  # Any: the journal's JSON
    if not fe:
        return ""
    if isinstance(fe, str):
        return one_line(fe)
    if isinstance(fe, dict):
        for k in ("summary", "label", "line", "message"):
            if fe.get(k):
                return one_line(fe[k])
    return one_line(fe)


def is_stale(age: float | None, interval: float, factor: float = 3.0) -> bool:
    """Data older than ``factor`` refresh intervals is stale (never-collected data is too)."""
    return age is None or age > factor * max(interval, 0.1)


#: the layers the status line shows a connection state for
LINK_LAYERS = ("ssh", "host", "container")


def link_states(
    *,
    transport: str,
    errors: Iterable[tuple[str | None, str | None]],
    container_ok: bool | None,
) -> dict[str, tuple[str, str]]:
    """The connection state per layer for the status line: ``{layer: (state, note)}``.

    ``state`` is ``ok``, ``fail``, ``unknown`` or ``n/a`` (no SSH with the local transport).
    ``errors`` are the current errors of the observed parts as ``(layer, message)``: the lowest
    failing link layer fails, those below it worked (the failure was reached through them), those
    above it are unknown.  Without errors, a part that answered proves every layer.
    """
    states: dict[str, tuple[str, str]] = {}
    failing: tuple[int, str, str] | None = None
    for layer, msg in errors:
        if layer in LINK_LAYERS:
            rank = LINK_LAYERS.index(layer)
            if failing is None or rank < failing[0]:
                failing = (rank, layer, msg or "")
    for i, layer in enumerate(LINK_LAYERS):
        if layer == "ssh" and transport == "local":
            states[layer] = ("n/a", "local transport: no SSH")
            continue
        if failing is not None:
            if i < failing[0]:
                states[layer] = ("ok", "")
            elif i == failing[0]:
                states[layer] = ("fail", failing[2])
            else:
                states[layer] = ("unknown", f"not reached: {failing[1]} failed")
        elif container_ok:
            states[layer] = ("ok", "")
        else:
            states[layer] = ("unknown", "no answer yet")
    return states
