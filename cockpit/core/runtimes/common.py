"""What most runtimes share: :class:`BaseRuntime`, the target as a plain host reached over SSH.

A runtime subclasses it and changes what differs (:mod:`.pct`, :mod:`.engine`, :mod:`.slurm`,
a test's toy runtime), so a new runtime is one module.  Every member is documented on the
interface, :class:`cockpit.core.runtimes.base.Runtime`.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from ..actions.jobrecord import JobRecord
from ..actions.jobstate import JobReader
from ..layers import Layer
from ..remote.sshopts import ssh_argv, ssh_params
from ..remote.startfail import StartWords
from .base import JobNodes, Scheduler, ShellArgv

__all__ = ["BaseRuntime", "login_shell"]


def login_shell(workdir: str) -> str:
    """The interactive shell on a host: a login shell in the job's workdir."""
    return f"cd {shlex.quote(workdir)} 2>/dev/null; exec \"${{SHELL:-/bin/sh}}\" -l"


class BaseRuntime:
    """The host itself: commands run by ``/bin/sh`` on the SSH host (see the interface)."""

    kind = "none"
    in_container = False
    tool = ""
    can_reboot = False
    restart_word = "reboot"
    reboot_refusal = ('reboot needs a container target ([target] runtime = "pct", "docker" or "podman"): '
                      "cockpit does not reboot hosts")
    running_text = "running"
    zombie_engine: str | None = None
    looks_for_strays = True
    strays_skip = ""
    job_nodes: JobNodes | None = None
    local_scratch = True
    scheduler: Scheduler | None = None
    reader_class: type[JobReader] = JobReader
    gpu_host_container: int | None = None
    gpu_stream = True
    reads_host_kmsg = False
    kmsg_refusal = "host kernel messages are read only for runtime = \"pct\""
    start_words = StartWords()

    def __init__(self, container: int | str | None = None) -> None:
        self.container = container

    def describe(self) -> str:
        return "host"

    # -- entering the target ------------------------------------------------------------------
    def shell(self) -> str:
        return "/bin/sh"

    def wrap(self, command: str) -> str:
        return f"/bin/sh -c {shlex.quote(command)}"

    def enter_argv(self) -> list[str] | None:
        """The argv that enters the target interactively, or None: a login shell on the host."""
        return None

    def interactive_argv(self, cfg: Any, environ: dict[str, str]) -> ShellArgv:
        enter = self.enter_argv()
        if cfg.target.transport == "local":
            if enter is not None:
                return enter, None
            wd = cfg.job.workdir
            return [environ.get("SHELL") or "/bin/sh"], (wd if wd and os.path.isdir(wd) else None)
        remote = shlex.join(enter) if enter is not None else login_shell(cfg.job.workdir)
        return ssh_argv(ssh_params(cfg)) + [remote], None

    def where_text(self, *, host: bool = False) -> str:
        return ""

    @property
    def command_layer(self) -> Layer:
        return Layer.CONTAINER if self.in_container else Layer.HOST

    # -- the container (none here) ------------------------------------------------------------
    def status_command(self) -> str:
        return ""

    def parse_status(self, output: str) -> str | None:
        return None

    def stopped_detail(self, output: str) -> str:
        return f"container {self.container} is stopped"

    def restart_command(self) -> str:
        return ""

    def start_hint(self) -> str:
        return ""

    def list_hint(self) -> str:
        return ""

    # -- the job ------------------------------------------------------------------------------
    def sched_id(self, job: JobRecord) -> str:
        return ""

    def node_local_caches(self, cfg: Any) -> bool:
        return False

    def lock_identity(self, cfg: Any) -> str:
        return str(cfg.job.workdir)
