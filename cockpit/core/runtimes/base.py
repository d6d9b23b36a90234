"""The one interface every runtime implements: :class:`Runtime` (and the two strategies a runtime
may hand out, :class:`Scheduler` and :class:`JobNodes`).

A runtime says where the job runs and how cockpit gets there: the Proxmox container
(:mod:`.pct`), a docker or podman container (:mod:`.engine`), the SSH host itself (:mod:`.host`),
or a Slurm login node whose scheduler runs the job (:mod:`.slurm`).  It is chosen once, from
``[target] runtime``, by :func:`cockpit.core.runtimes.runtime_for`; the transport carries it
(``transport.runtime``, so every action reaches it as ``ctx.transport.runtime``) and the engine
holds it (``engine.runtime``).  Nothing outside :mod:`cockpit.core.runtimes` asks which runtime it
has: it asks the runtime.

This module is a leaf (its imports are for type checking only), so the transports below the
actions can name the type.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from ..actions.base import ActionContext
    from ..actions.jobrecord import JobRecord
    from ..actions.jobstate import JobReader
    from ..layers import Finding, Layer, Verdict
    from ..probes.gpu.model import GPUSnapshot
    from ..remote.startfail import StartWords

__all__ = ["Runtime", "Scheduler", "JobNodes", "ShellArgv"]

#: ``(argv, cwd)``: the interactive shell the TUI's ``!`` key opens (cwd None: the current one)
ShellArgv = tuple[list[str], "str | None"]


class Scheduler(Protocol):
    """Launches and stops jobs for a runtime whose jobs a scheduler runs (Slurm's ``sbatch``)."""

    #: the scheduler's name as the job record keeps it (``JobRecord.scheduler``)
    name: str

    async def launch(self, ctx: ActionContext, attempt: int, verdict: Verdict | None = None) -> tuple[Verdict, JobRecord | None]:
        """Submit ``[job] command``; the verdict of the launch and the job's record (its id there)."""
        ...

    async def stop(self, ctx: ActionContext, job: JobRecord | None, verdict: Verdict | None = None) -> Verdict:
        """Stop every job of the target the scheduler still runs or queues, and prove it."""
        ...


class JobNodes(Protocol):
    """Where a job spread over nodes (Slurm's) has its processes and GPUs, asked from the target."""

    def procs_command(self, cfg: Any, sched_id: str) -> str:
        """One command on the target that lists the job's processes on each of its nodes."""
        ...

    def parse_procs(self, out: bytes | str, sched_id: str) -> list[Any] | None:
        """Its output as one entry per node (``.node``, ``.procs``, ``.job_pids``, ``.bad_lines``);
        None: the job runs on no node now."""
        ...

    def findings(self, nodes: list[Any]) -> list[Finding]:
        """What the nodes' answers say beyond each process table (a node that did not answer…)."""
        ...

    async def gpu_snapshot(self, cfg: Any, sched_id: str, run: Callable[..., Awaitable[Any]],
                           probe: Callable[[Any], Awaitable[GPUSnapshot]]) -> GPUSnapshot:
        """The GPU probe (``probe(runner)``) on each node of the job, merged into one snapshot."""
        ...

    async def clear_caches(self, ctx: ActionContext, verdict: Verdict | None = None) -> Verdict:
        """clear-cache on each node of the job (``[slurm] node_local_cache``)."""
        ...


class Runtime(Protocol):
    """Where the job runs and how cockpit reaches, looks after, and follows it there."""

    # -- what it is ---------------------------------------------------------------------------
    #: the ``[target] runtime`` value it was chosen by (the lock file's name, status JSON)
    kind: str
    #: the container: the CTID for pct, a name or ID for docker/podman; None without one
    container: int | str | None

    def describe(self) -> str:
        """Where commands run, in a few words (``pct 200``, ``docker container trainer``, ``host``)."""
        ...

    # -- entering the target ------------------------------------------------------------------
    def shell(self) -> str:
        """The host command line that starts the long-lived shell inside the target (the
        persistent session reads and writes it)."""
        ...

    def wrap(self, command: str) -> str:
        """A host command line that runs ``command`` (a shell string) inside the target."""
        ...

    def interactive_argv(self, cfg: Any, environ: dict[str, str]) -> ShellArgv:
        """The interactive shell the TUI's ``!`` key opens inside the target: over SSH, the argv of
        :func:`cockpit.core.remote.sshopts.ssh_argv` with the command that enters the target."""
        ...

    def where_text(self, *, host: bool = False) -> str:
        """What a confirmation modal appends to "over SSH on HOST": where a command runs
        (``host``: a command run on the host, e.g. the reboot), "" when the host is all there is."""
        ...

    @property
    def command_layer(self) -> Layer:
        """The layer a command inside the target fails at (the container's, else the host's)."""
        ...

    #: how a shell that could not start (or died) is explained (:mod:`cockpit.core.remote.startfail`)
    start_words: StartWords

    # -- the container, from the host ---------------------------------------------------------
    #: the target is a container on the host, which the host can inspect and restart
    in_container: bool
    #: the host-side command that manages the container (``pct``, ``docker``…; "" without one)
    tool: str
    #: cockpit's reboot action can restart the target (a container); the host is never rebooted
    can_reboot: bool
    #: what the UI calls a restart ("reboot" for Proxmox, "restart" for docker and podman)
    restart_word: str
    #: why reboot is refused on this runtime (the action's and the UI's words); "" when it can
    reboot_refusal: str
    #: what the reboot's "running again" stage says once the container runs
    running_text: str

    def status_command(self) -> str:
        """A host command whose output :meth:`parse_status` reads."""
        ...

    def parse_status(self, output: str) -> str | None:
        """``"running"``, ``"stopped"`` (any state a start would cure) or None (not a status)."""
        ...

    def stopped_detail(self, output: str) -> str:
        """How a stopped container is described, from :meth:`status_command`'s output."""
        ...

    def restart_command(self) -> str:
        """The host command that restarts the container (every process in it dies)."""
        ...

    def start_hint(self) -> str:
        """The command a person runs on the host to start the stopped container."""
        ...

    def list_hint(self) -> str:
        """The command that lists the host's containers."""
        ...

    # -- the job's processes ------------------------------------------------------------------
    #: the container engine whose ``run --init`` cures a PID 1 that does not reap (zombie advice)
    zombie_engine: str | None
    #: the stop action looks for copies of the job cockpit did not start (not on a login node)
    looks_for_strays: bool
    #: why strays are not looked for ("" when they are)
    strays_skip: str
    #: the job's processes and GPUs are on nodes the target reaches (Slurm), not in the target
    job_nodes: JobNodes | None
    #: the target's own /tmp is where the job writes (a login node's is not a compute node's)
    local_scratch: bool

    # -- launch and follow --------------------------------------------------------------------
    #: the scheduler that launches and stops the job; None: cockpit starts and signals it itself
    scheduler: Scheduler | None
    #: the class that reads the job's state and log again and again
    reader_class: type[JobReader]

    def sched_id(self, job: JobRecord) -> str:
        """The scheduler's id of ``job`` the observer follows on its nodes ("" for none)."""
        ...

    # -- caches, GPUs, the kernel log -----------------------------------------------------------
    def node_local_caches(self, cfg: Any) -> bool:
        """clear-cache runs on the job's nodes (:meth:`JobNodes.clear_caches`), not in the target."""
        ...

    #: the container whose GPU processes the host can list and map (pct's CTID: ``lxc-info``)
    gpu_host_container: int | None
    #: the GPU stream (one long-lived ``nvidia-smi``) can follow the job's GPUs from the target
    gpu_stream: bool
    #: the host's kernel log is read for the job (pct: ``dmesg`` on the Proxmox host)
    reads_host_kmsg: bool
    #: why the kernel log is not read ("" when it is)
    kmsg_refusal: str

    # -- the target lock ----------------------------------------------------------------------
    def lock_identity(self, cfg: Any) -> str:
        """What one lock on the host covers: the container, or the job's workdir on the host."""
        ...
