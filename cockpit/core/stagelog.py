"""Stages into the journal as they finish, for an action whose attempt is opened part-way through.

A relaunch stops the old job before its attempt exists; an adoption identifies the process first.
Their stages so far wait in :class:`StageRecorder` and go into the attempt the moment it is opened
(:meth:`StageRecorder.start`); from then on each stage is written as it finishes, and the job
record goes first, when the spawn answers, so a cockpit that dies right then is still found by
the next one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .layers import Stage, Status

if TYPE_CHECKING:  # pragma: no cover
    from .journal import Journal

__all__ = ["StageRecorder"]


class StageRecorder:
    """``recorder(action, stage)``: the stage listener to give :meth:`Engine.context`."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.attempt: int | None = None
        self._pending: list[tuple[str, Stage]] = []

    def __call__(self, action: str, stage: Stage) -> None:
        if stage.status is Status.RUNNING:
            return
        if self.attempt is None:
            self._pending.append((action, stage))
            return
        if action == "launch" and stage.name == "spawn" and "job" in stage.data:
            self.journal.record_job(self.attempt, stage.data["job"])
        self.journal.record_stage(self.attempt, action, stage)

    def start(self, attempt: int) -> None:
        """The attempt is open: what waited is written to it, and every stage from now on."""
        self.attempt = attempt
        pending, self._pending = self._pending, []
        for action, stage in pending:
            self(action, stage)
