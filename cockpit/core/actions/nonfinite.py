"""A run whose loss turned NaN is not healthy: the first non-finite value of a metric that must stay finite.

A training loop that goes on printing ``step 10 loss nan grad_norm nan`` is alive and makes
progress lines, so without this it passes and its fate stays ``running``: the most important
number of the run is the one that says it is over.  :class:`NonFiniteWatch` sees every log line
(the same :class:`~cockpit.core.metrics.MetricParser` as the metrics: ``[metrics] pattern``, then
the built-in forms), and keeps the first value of a ``[metrics] required_finite`` metric (``loss``
by default) that is ``nan``/``inf``, with its step and its line; the ``inf`` a best-so-far value
(``best_val_loss``) holds before its first evaluation is not one (:func:`running_min`).  It is separate from the metrics
recorder on purpose: the verdict must not depend on whether a metrics store is attached.

``[verify] nonfinite``: ``"fail"`` (the default) fails verify (``settled``, layer ``app``) and,
after a pass, makes the fate ``diverged (app)``; ``"warn"`` says it in the verdict and leaves both.

Cheap: a line without ``nan`` or ``inf`` (any case) is never parsed here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..metrics.parse import MetricParser

if TYPE_CHECKING:
    from ..config import Config

__all__ = ["Divergence", "NonFiniteWatch", "make_watch", "required", "running_min", "diverged_cause", "ADVICE"]

ADVICE = ("the run diverged: lower the learning rate, clip the gradients, check the data and the loss for inf/NaN "
          "(torch.autograd.set_detect_anomaly finds the first operation that made one)")
_SEPS = "/_.- :"
#: the first words of a best-so-far metric's name (:func:`running_min`)
_RUNNING_MIN = ("best", "min_", "min-", "lowest")


@dataclass(frozen=True)
class Divergence:
    """The first non-finite value of a required metric: which, what, at which step, on which line."""

    name: str
    value: str
    step: float | None
    line_no: int
    line: str

    def describe(self) -> str:
        at = f" at step {self.step:g}" if self.step is not None else ""
        return f"{self.name} turned non-finite ({self.value}){at}: line {self.line_no}: {self.line.strip()[:160]}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "step": self.step, "line_no": self.line_no, "line": self.line[:300]}


def required(name: str, wanted: tuple[str, ...]) -> bool:
    """``name`` is one of ``wanted``, or ends with one after a separator (``train/loss``, ``eval_loss``)."""
    n = name.lower()
    for w in wanted:
        if n == w or (n.endswith(w) and n[-len(w) - 1] in _SEPS):
            return True
    return False


def running_min(name: str) -> bool:
    """A best-so-far value (``best_val_loss``, ``train/min_loss``): a running minimum starts at
    ``inf`` (``best = float("inf")``) until the first evaluation and never returns to it once
    finite, so its ``inf`` is "none yet", never a divergence (its ``nan`` still is one)."""
    last = name.lower().replace(".", "/").rsplit("/", 1)[-1]
    return last.startswith(_RUNNING_MIN)


class NonFiniteWatch:
    """Keeps the first :class:`Divergence` of the lines it is fed (see the module doc)."""

    def __init__(self, wanted: tuple[str, ...] = ("loss",), pattern: str = "", builtin: bool = True) -> None:
        self.wanted = tuple(w.lower() for w in wanted if w)
        self.parser = MetricParser(pattern, builtin)
        self.first: Divergence | None = None
        #: lines with a non-finite required value (the first one is kept whole)
        self.count = 0

    def line(self, line_no: int, text: str) -> None:
        if not self.wanted:
            return
        low = text.lower()
        if "nan" not in low and "inf" not in low:
            return
        r = self.parser.parse(text)
        if r is None:
            return
        for name, v in r.values.items():
            if not math.isfinite(v) and required(name, self.wanted) and not (v == math.inf and running_min(name)):
                self.count += 1
                if self.first is None:
                    self.first = Divergence(name, repr(v), r.step, line_no, text)
                return


def make_watch(cfg: Config) -> NonFiniteWatch:
    m = cfg.metrics
    return NonFiniteWatch(tuple(m.required_finite), m.pattern, m.builtin)


def diverged_cause(cfg: Config, watch: NonFiniteWatch | None) -> str | None:
    """The fate's cause when the run diverged and ``[verify] nonfinite`` is ``fail``; else None."""
    if watch is None or watch.first is None or cfg.verify.nonfinite != "fail":
        return None
    more = f" ({watch.count} such lines)" if watch.count > 1 else ""
    return watch.first.describe() + more
