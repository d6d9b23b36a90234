"""Attempts whose job cockpit no longer follows while their story is not over.

The engine follows one job: the latest attempt's (:meth:`~cockpit.core.engine.Engine.follow`).  An
attempt's job is normally ended by the next attempt's stop, which journals its fate (``stopped``,
or how it ended before).  ``cockpit launch`` starts a job beside the one before without stopping
it, so the earlier attempt's job was no longer followed: after a reboot ended both, history still
read ``passed → running`` for it, for ever, since nothing read that job again.

A fresh cockpit (``cockpit status``'s reconcile, the TUI's start) reads each such attempt's job once
(:func:`reconcile_superseded`): the last :data:`LOOK_BACK` attempts whose latest fate is not final
and whose job record names a process (or a scheduler's job), the followed one aside.  Its fate is
journalled when it changed (a job that ended reads as it ended; one still running stays
``running``, as it is: it runs beside the followed job).  Attempts with nothing to read cost nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .actions.base import ActionContext
from .actions.jobrecord import JobRecord
from .fate import read_fate
from .fate_record import Fate, latest_fate
from .journal import Journal
from .remote.base import RemoteError

__all__ = ["LOOK_BACK", "superseded_jobs", "reconcile_superseded"]

log = logging.getLogger(__name__)

#: how many of the latest attempts are looked at
LOOK_BACK = 20


def superseded_jobs(journal: Journal, followed: int | None) -> list[tuple[int, JobRecord]]:
    """The attempts (newest first) whose story is open and whose job is not the followed one."""
    out: list[tuple[int, JobRecord]] = []
    for rec in reversed(journal.attempts()[-LOOK_BACK:]):
        job = rec.job or {}
        if rec.attempt == followed or not (job.get("pid") or job.get("sched_id")):
            continue
        fate = latest_fate(rec)
        if fate is not None and not fate.final:
            out.append((rec.attempt, JobRecord.from_dict({**job, "attempt": rec.attempt})))
    return out


async def reconcile_superseded(ctx: ActionContext, jobs: list[tuple[int, JobRecord]], record: Callable[[int, Fate], None]) -> None:
    """Read each of ``jobs`` (:func:`superseded_jobs`) once and ``record`` its fate.  A target that
    cannot be reached leaves them as they were (the next start tries again)."""
    for attempt, job in jobs:
        try:
            fate = await read_fate(ctx, job)
        except RemoteError as e:
            log.info("could not read attempt %d's job: %s", attempt, e.message)
            break
        record(attempt, fate)
