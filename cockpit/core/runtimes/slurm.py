"""``runtime = "slurm"``: a Slurm login node; the job goes through the scheduler (``[slurm]``).

Commands run on the login node like on a host; the job is launched with ``sbatch`` and stopped
with ``scancel`` (:class:`SlurmScheduler`), read from the scheduler's states
(:class:`~cockpit.core.slurm.state.SlurmReader`), and its processes, GPUs and node-local caches
are on its compute nodes (:class:`SlurmNodes`, a step there with ``srun --overlap``).  The
implementation lives in :mod:`cockpit.core.slurm`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..actions.base import ActionContext
from ..actions.jobrecord import JobRecord
from ..actions.jobstate import JobReader
from ..layers import Finding, Verdict
from ..probes.gpu.model import GPUSnapshot
from ..slurm import cache as slurm_cache
from ..slurm import gpus as slurm_gpus
from ..slurm import launch as slurm_launch
from ..slurm import nodes as slurm_nodes
from ..slurm.state import SlurmReader
from .common import BaseRuntime

__all__ = ["SlurmRuntime", "SlurmScheduler", "SlurmNodes"]


class SlurmScheduler:
    """Launch and stop through Slurm (what :func:`~cockpit.core.actions.job.launch` hands over to)."""

    name = "slurm"

    async def launch(self, ctx: ActionContext, attempt: int, verdict: Verdict | None = None) -> tuple[Verdict, JobRecord | None]:
        return await slurm_launch.launch(ctx, attempt, verdict)

    async def stop(self, ctx: ActionContext, job: JobRecord | None, verdict: Verdict | None = None) -> Verdict:
        return await slurm_launch.stop(ctx, job, verdict)


class SlurmNodes:
    """A Slurm job's processes, GPUs and caches, on each of its nodes."""

    def procs_command(self, cfg: Any, sched_id: str) -> str:
        return slurm_nodes.node_procs_command(cfg, sched_id)

    def parse_procs(self, out: bytes | str, sched_id: str) -> list[Any] | None:
        return slurm_nodes.parse_node_procs(out, sched_id)

    def findings(self, nodes: list[Any]) -> list[Finding]:
        return slurm_nodes.node_findings(nodes)

    async def gpu_snapshot(self, cfg: Any, sched_id: str, run: Callable[..., Awaitable[Any]],
                           probe: Callable[[Any], Awaitable[GPUSnapshot]]) -> GPUSnapshot:
        return await slurm_gpus.node_gpu_snapshot(cfg, sched_id, run, probe)

    async def clear_caches(self, ctx: ActionContext, verdict: Verdict | None = None) -> Verdict:
        return await slurm_cache.clear_node_local(ctx, verdict)


class SlurmRuntime(BaseRuntime):
    """A login node: commands on the host, the job through the scheduler, its parts on its nodes."""

    kind = "slurm"
    looks_for_strays = False
    strays_skip = "Slurm runs the jobs: no copies to look for on the login node"
    local_scratch = False  # the login node's /tmp is not the compute node's
    gpu_stream = False  # the GPUs are on the job's nodes, asked per refresh
    reader_class: type[JobReader] = SlurmReader

    def __init__(self) -> None:
        super().__init__(None)
        self.scheduler = SlurmScheduler()
        self.job_nodes = SlurmNodes()

    @classmethod
    def from_config(cls, cfg: Any) -> SlurmRuntime:
        return cls()

    def describe(self) -> str:
        return "Slurm login node"

    def sched_id(self, job: JobRecord) -> str:
        return job.sched_id if job.scheduler == SlurmScheduler.name else ""

    def node_local_caches(self, cfg: Any) -> bool:
        return bool(cfg.slurm.node_local_cache)
