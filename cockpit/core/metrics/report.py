"""Metrics as plain data and short text: the history's ``metrics`` object, and two attempts side by side.

:func:`summary` is what ``cockpit history --json`` prints per attempt (``metrics``)::

    {"last_step": 120, "total": 1000, "steps_per_s": 4.93,
     "values": {"loss": {"last": 1.83, "at": 120, "best": 1.8, "best_at": 110, "goal": "min", "count": 120}, …}}

``goal`` is ``min`` for loss-like names, ``max`` for accuracy- and throughput-like ones (``best``
is then the lowest or the highest value), null for the rest (no ``best``).  ``nonfinite`` (only when
a value was NaN or inf): the first such value of each metric, ``{"loss": {"value": "nan", "at": 10,
"line": 12}}`` (those values are kept out of ``last``/``best`` and the plots).  ``steps_per_s`` runs
from the end of cockpit's first read of the log to its last one.  :func:`at_steps` samples two
attempts at matching steps for ``cockpit compare``.
"""

from __future__ import annotations

import bisect
import math
from typing import Any

from .series import AttemptMetrics, Series

__all__ = ["summary", "summary_line", "at_steps", "value_at", "fmt_value", "fmt_rate", "primary"]


def _clean(v: float | None) -> float | int | None:
    if v is None or not math.isfinite(v):
        return None
    return int(v) if float(v).is_integer() and abs(v) < 1e15 else round(v, 6 if abs(v) >= 1e-3 else 12)


def summary(m: AttemptMetrics | None, total_steps: int = 0) -> dict[str, Any] | None:
    """The ``metrics`` object of one attempt (None when its log gave none)."""
    if m is None or not (m.series or m.nonfinite):
        return None
    values: dict[str, Any] = {}
    for name in m.names():
        s = m.series[name]
        if s.last is None:
            continue
        d: dict[str, Any] = {"last": _clean(s.last[1]), "at": _clean(s.last[0])}
        best = s.best
        if best is not None:
            d["best"], d["best_at"] = _clean(best[1]), _clean(best[0])
        d["goal"], d["count"] = s.goal, s.count
        values[name] = d
    rate = m.mean_rate()
    out = {"last_step": _clean(m.last_step), "total": m.total(total_steps), "steps_per_s": round(rate, 3) if rate else None,
           "values": values}
    if m.nonfinite:  # the first NaN/inf of each metric: where the run diverged
        out["nonfinite"] = {k: {"value": v.get("value"), "at": _clean(v.get("step")), "line": v.get("line")} for k, v in m.nonfinite.items()}
    return out


def fmt_value(v: float | int | None) -> str:
    """``1.83``, ``3e-04``, ``5100``: short, and exact enough to compare two attempts."""
    if v is None:
        return "—"
    if isinstance(v, int) or (float(v).is_integer() and abs(v) < 1e7):
        return f"{int(v)}"
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e6):
        return f"{v:.2e}"
    return f"{v:.4g}" if a < 1 else f"{v:.5g}"


def fmt_rate(rate: float | None) -> str:
    if not rate:
        return "—"
    return f"{rate:.3g} steps/s" if rate >= 1 else f"{1 / rate:.3g} s/step"


def summary_line(d: dict[str, Any] | None, limit: int = 4) -> str:
    """``loss 1.83 (best 1.8 @ 110) · lr 3e-04 · step 120/1000 · 4.93 steps/s``: one line per attempt."""
    if not d or not (d.get("values") or d.get("nonfinite")):
        return ""
    parts: list[str] = []
    for name, nf in list((d.get("nonfinite") or {}).items())[:2]:  # a diverged run says so first
        parts.append(f"{name} {nf.get('value')} from step {fmt_value(nf.get('at'))}")
    for name, v in list(d["values"].items())[:limit]:
        text = f"{name} {fmt_value(v.get('last'))}"
        if v.get("best") is not None and v.get("best") != v.get("last"):
            text += f" (best {fmt_value(v['best'])} @ {fmt_value(v.get('best_at'))})"
        parts.append(text)
    more = len(d["values"]) - limit
    if more > 0:
        parts.append(f"… {more} more")
    if d.get("last_step") is not None:
        parts.append(f"step {fmt_value(d['last_step'])}" + (f"/{d['total']}" if d.get("total") else ""))
    if d.get("steps_per_s"):
        parts.append(fmt_rate(d["steps_per_s"]))
    return " · ".join(parts)


def primary(names: list[str]) -> str | None:
    """The metric shown first: ``loss``, else a loss-like one, else the first."""
    for test in (lambda n: n.lower() == "loss", lambda n: "loss" in n.lower(), lambda n: True):
        for n in names:
            if test(n):
                return n
    return None


def value_at(s: Series, step: float) -> float | None:
    """The value at ``step``: the point there, else linear between its neighbours (None outside)."""
    xs = s.xs
    if not xs or step < xs[0] or step > xs[-1]:
        return None
    i = bisect.bisect_left(xs, step)
    if i < len(xs) and xs[i] == step:
        return s.ys[i]
    x0, x1, y0, y1 = xs[i - 1], xs[i], s.ys[i - 1], s.ys[i]
    return y0 + (y1 - y0) * (step - x0) / (x1 - x0) if x1 != x0 else y1


def at_steps(a: Series, b: Series, n: int = 5) -> list[dict[str, Any]]:
    """``n`` steps both series cover (steps both logged, where there are enough), each with both
    values and B − A; ``exact`` is False where a value is interpolated between logged steps."""
    if not a.xs or not b.xs:
        return []
    lo, hi = max(a.xs[0], b.xs[0]), min(a.xs[-1], b.xs[-1])
    if lo > hi:
        return []
    common = sorted(set(a.xs) & set(b.xs))
    common = [x for x in common if lo <= x <= hi]
    if len(common) >= n:
        steps = [common[round(i * (len(common) - 1) / (n - 1))] for i in range(n)] if n > 1 else [common[-1]]
    elif lo == hi:
        steps = [lo]
    else:
        steps = [lo + (hi - lo) * i / (n - 1) for i in range(n)] if n > 1 else [hi]
        if all(float(s).is_integer() for s in a.xs + b.xs):
            steps = sorted({float(round(s)) for s in steps})
    rows = []
    for x in dict.fromkeys(steps):
        va, vb = value_at(a, x), value_at(b, x)
        exact = x in a.xs and x in b.xs
        rows.append({"step": _clean(x), "a": _clean(va), "b": _clean(vb),
                     "delta": _clean(vb - va) if va is not None and vb is not None else None, "exact": exact})
    return rows
