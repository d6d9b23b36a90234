"""Slurm: the job lives in the cluster's scheduler (``[target] runtime = "slurm"``, ``[slurm]``).

The target is a login node reached over the same SSH session; the scheduler is a strategy object
(:class:`SlurmScheduler`) that :func:`cockpit.core.actions.job.launch` and ``stop`` hand over to,
and :class:`~.state.SlurmReader` is the job reader verify and the fate follower get for a Slurm job
(``JobReader(ctx, job)`` returns one when the record names a scheduler).  Everything else
(deploy, clear caches, the log scan, signatures, the settle window, the journal) is unchanged.

* launch  = ``sbatch --parsable`` (:mod:`.launch`); the job id is the record, not a pid;
* stop    = ``scancel`` of every job of the target cockpit recorded that is still queued or running
  (:mod:`.own`), then ``scancel --signal=KILL`` after ``[job] stop_timeout``, confirmed by ``squeue``;
* verify and fate from Slurm's own states (:mod:`.scontrol`): PENDING is *pending* (the reason and
  the queue position say why), a request that cannot start (nodes drained or down) is ``host``,
  RUNNING is judged on the log like any job, and NODE_FAIL → host, OUT_OF_MEMORY → container,
  TIMEOUT / PREEMPTED → process, FAILED → its log (a traceback → app) and exit code; CANCELLED
  (by cockpit or anyone) is the fate ``stopped``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..actions.base import ActionContext
    from ..actions.job import JobRecord
    from ..layers import Verdict

__all__ = ["scheduler", "reader_class", "SlurmScheduler"]


class SlurmScheduler:
    """Launch and stop through Slurm (the seam :func:`~cockpit.core.actions.job.scheduler_for` returns)."""

    name = "slurm"

    async def launch(self, ctx: ActionContext, attempt: int, verdict: Verdict | None = None) -> tuple[Verdict, JobRecord | None]:
        from .launch import launch

        return await launch(ctx, attempt, verdict)

    async def stop(self, ctx: ActionContext, job: JobRecord | None, verdict: Verdict | None = None) -> Verdict:
        from .launch import stop

        return await stop(ctx, job, verdict)


def scheduler(kind: str) -> SlurmScheduler:
    if kind != "slurm":
        raise ValueError(f"unknown scheduler {kind!r}")
    return SlurmScheduler()


def reader_class(kind: str) -> type:
    if kind != "slurm":
        raise ValueError(f"unknown scheduler {kind!r}")
    from .state import SlurmReader

    return SlurmReader
