"""``[metrics]``: how cockpit reads the job's numbers from its log, as config (a helper of
:mod:`cockpit.core.config`; the parsing itself is :mod:`cockpit.core.metrics`)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MetricsConfig", "pattern_problem"]


def pattern_problem(pattern: str) -> str | None:
    """Why ``[metrics] pattern`` cannot be used (None when it can)."""
    try:
        rx = re.compile(pattern)
    except re.error as e:
        return f"is not a valid regular expression ({e})"
    names = set(rx.groupindex)
    if not names - {"step", "total"}:
        return "has no named group for a value: name each value's group, e.g. (?P<loss>[0-9.e+-]+)"
    return None


def _f(default: Any, doc: str, check: Callable[[Any], str | None] | None = None) -> Any:
    """A field with the metadata :mod:`cockpit.core.config` reads (``doc``, ``choices``, ``check``)."""
    return dataclasses.field(default=default, metadata={"doc": doc, "choices": None, "check": check})


def _pattern(v: Any) -> str | None:
    return pattern_problem(v) if v else None


@dataclass
class MetricsConfig:
    pattern: str = _f("", "A Python regular expression with a named group per value, searched in every log line, e.g. "
                          "'it (?P<step>\\d+) .* nll=(?P<nll>[0-9.e+-]+)'; a group named step is the step, total the "
                          "run's total steps. Tried before the built-in forms; empty: the built-in forms only.", _pattern)
    builtin: bool = _f(True, "Also read the common forms: 'step 120 loss 1.83 lr 3e-4', 'step=120 | loss=1.83', "
                             "{'loss': 1.83, 'epoch': 0.1} (HF Trainer), tqdm and Lightning progress bars. "
                             "false: only pattern.")
    total_steps: int = _f(0, "The run's total steps, for the ETA; 0: the total the log gives (a progress bar's 120/1000, "
                             "'step 120/1000'), else no ETA.", lambda v: None if v >= 0 else "must be 0 or more")
    required_finite: list[str] = dataclasses.field(default_factory=lambda: ["loss"], metadata={
        "doc": "Metrics that must stay finite: one that turns NaN or inf is a diverged run ([verify] nonfinite). A name "
               "matches itself and any metric ending in it after a separator (loss: train_loss, train/loss, eval_loss).",
        "choices": None, "check": None})
    max_points: int = _f(2000, "Points kept per metric and attempt; past it a series is thinned evenly, keeping its first, "
                               "last and best points.", lambda v: None if v >= 100 else "must be 100 or more")
