"""What one attempt came to (:class:`AttemptResult`): its outcome, verdict, job and timings.

Apart from :mod:`.attempt` (which makes it) so that the events that carry it (:mod:`.events`) and the
front ends can name it without importing the attempt sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .actions.job import JobRecord
from .actions.jobstate import JobReader
from .layers import Finding, Outcome, Verdict

__all__ = ["AttemptResult"]


@dataclass
class AttemptResult:
    attempt: int
    outcome: Outcome
    verdict: Verdict
    first_error: dict[str, Any] | None = None
    job: JobRecord | None = None
    timings: dict[str, float] = field(default_factory=dict)
    #: what this attempt deployed that the previous one did not (files, +/- lines, diff path)
    changes: dict[str, Any] | None = None
    #: the reader verify used (the fate follower goes on from where it stopped)
    reader: JobReader | None = field(default=None, repr=False, compare=False)
    #: what the log noticed without failing the attempt (a handled error, torch.compile's eager fallback)
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "outcome": self.outcome.value,
            "layer": self.verdict.layer.value if self.verdict.layer else None,
            "summary": self.verdict.summary(),
            "first_error": self.first_error,
            "job": self.job.to_dict() if self.job else None,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "changes": self.changes,
            "findings": [f.to_dict() for f in self.findings],
            "verdict": self.verdict.to_dict(),
        }
