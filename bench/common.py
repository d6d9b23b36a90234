"""What every benchmark hands to ``python -m bench``: rows of (name, figure, baseline, ratio).

Each ``bench_*.py`` keeps its own command line and its detailed printout; its ``rows(quick)``
runs it (small n with ``quick``) and answers :class:`Row` objects, each figure beside a baseline
measured in the same run.  The ratio is always figure ÷ baseline (so below 1 is "less than the
baseline": faster, smaller; for a throughput it is the speed-up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Row", "format_table", "fmt_value"]


@dataclass
class Row:
    bench: str
    #: what was measured, e.g. "one probe (persistent session)"
    name: str
    figure: float
    unit: str
    #: the baseline's value (same unit) and what it is; None when a figure has no baseline
    baseline: float | None = None
    baseline_name: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or not self.baseline or math.isnan(self.figure) or math.isnan(self.baseline):
            return None
        return self.figure / self.baseline


def fmt_value(v: float | None, unit: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    a = abs(v)
    if unit in ("lines/s",):
        text = f"{v:,.0f}"
    elif a >= 1000:
        text = f"{v:,.0f}"
    elif a >= 100:
        text = f"{v:.0f}"
    elif a >= 10:
        text = f"{v:.1f}"
    else:
        text = f"{v:.2f}"
    return f"{text} {unit}".strip()


def _fmt_ratio(r: float | None) -> str:
    if r is None:
        return "—"
    return f"{r:.2g}×" if r < 0.1 else f"{r:.2f}×" if r < 10 else f"{r:.1f}×"


def format_table(rows: list[Row], markdown: bool = False) -> str:
    """One table: bench, figure, value, baseline (what and value), ratio = figure ÷ baseline."""
    head = ("bench", "figure", "value", "baseline", "baseline value", "ratio")
    body = [(r.bench, r.name, fmt_value(r.figure, r.unit), r.baseline_name or "—", fmt_value(r.baseline, r.unit) if r.baseline is not None else "—",
             _fmt_ratio(r.ratio)) for r in rows]
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if i in (2, 4, 5) else "---" for i in range(len(head))) + "|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
        return "\n".join(out)
    widths = [max(len(head[i]), *(len(row[i]) for row in body)) if body else len(head[i]) for i in range(len(head))]
    right = {2, 4, 5}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()

    return "\n".join([line(head), line(tuple("-" * w for w in widths)), *(line(row) for row in body)])
