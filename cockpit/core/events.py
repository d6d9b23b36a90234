"""The engine's typed events: everything a front end learns from the core comes as one of these.

Front ends subscribe with :meth:`cockpit.core.engine.Engine.subscribe`; the TUI turns each into a
Textual message in one thin adapter, ``cockpit watch`` and the headless commands print them.  Events
are frozen: a subscriber can keep one without it changing under it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from .layers import Stage, Verdict

if TYPE_CHECKING:  # pragma: no cover
    from .attempt_result import AttemptResult
    from .compile import CompileSummary
    from .fate_record import Fate

__all__ = ["StageProgress", "ActionStarted", "ActionFinished", "FateChanged", "CompileUpdated", "Event", "Subscriber"]


@dataclass(frozen=True)
class StageProgress:
    """A stage of a running action was started (status ``running``) or decided."""

    action: str
    stage: Stage


@dataclass(frozen=True)
class ActionStarted:
    action: str
    note: str = ""
    #: "manual", "on-save", "cli"
    trigger: str = "manual"


@dataclass(frozen=True)
class ActionFinished:
    """An action ended.  ``result`` is set for attempts (every attempt, however it was started)."""

    action: str
    verdict: Verdict
    result: AttemptResult | None = None
    duration_s: float = 0.0
    trigger: str = "manual"

    @property
    def attempt(self) -> int | None:
        return self.result.attempt if self.result is not None else None


@dataclass(frozen=True)
class FateChanged:
    """An attempt's job changed state after its verdict (``running`` → ``died`` …)."""

    attempt: int
    fate: Fate
    outcome: str | None = None

    @property
    def news(self) -> bool:
        """A passed attempt whose job then died or vanished: worth a notification."""
        return self.outcome == "passed" and self.fate.state in ("died", "diverged", "vanished", "stalled")


@dataclass(frozen=True)
class CompileUpdated:
    """torch.compile's summary of an attempt's job changed (frames compiled, recompiles, graph
    breaks, failures, alerts: docs/compile.md); ``final`` once the job has ended and its trace was read whole."""

    attempt: int
    summary: CompileSummary
    final: bool = False


Event: TypeAlias = StageProgress | ActionStarted | ActionFinished | FateChanged | CompileUpdated
Subscriber = Callable[[Event], None]
