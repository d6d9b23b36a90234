"""How to get a command *inside* the target: the container-runtime wrappers.

``runtime = "pct"`` wraps with ``pct exec CTID -- …``; ``"docker"`` and ``"podman"`` with
``docker exec -i NAME …`` (the same CLI shape); ``"none"`` and ``"slurm"`` run on the host.
Every command string is built with :func:`shlex.quote` from config values.  Inside ``pct exec``
PATH is minimal (``/sbin:/bin:/usr/sbin:/usr/bin``), so cockpit's own commands use only tools
found there.

The three container runtimes differ in the host-side commands that look after the container
(its status, its restart, the words the UI uses for them); those live here, so an action asks
``runtime.status_command()`` and never spells ``pct`` itself.  Why one class with a ``kind``
rather than a class per runtime: the differences are a handful of command lines and words, and
the ``Runtime`` is a frozen value that travels into the transport, the UI's confirm texts and
the reboot action alike.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

__all__ = ["Runtime", "PCT_EXEC_PATH", "CONTAINER_KINDS", "ENGINE_KINDS"]

#: the PATH that ``pct exec`` gives a command inside a container
PCT_EXEC_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"
#: runtimes whose target is a container on the host
CONTAINER_KINDS = ("pct", "docker", "podman")
#: container engines driven through the docker-compatible CLI
ENGINE_KINDS = ("docker", "podman")


@dataclass(frozen=True)
class Runtime:
    kind: str = "none"  # "pct" | "docker" | "podman" | "none" | "slurm" (a login node: jobs go through sbatch)
    container: int | str | None = None  # the CTID for pct; a name or ID for docker/podman
    pct: str = "pct"
    docker: str = "docker"
    podman: str = "podman"

    @property
    def in_container(self) -> bool:
        return self.kind in CONTAINER_KINDS

    @property
    def is_engine(self) -> bool:
        """docker or podman (the docker-compatible CLI)."""
        return self.kind in ENGINE_KINDS

    @property
    def tool(self) -> str:
        """The host-side command that manages the container (``pct``, ``docker``, ``podman``)."""
        return {"pct": self.pct, "docker": self.docker, "podman": self.podman}.get(self.kind, "")

    def _ref(self) -> str:
        if self.kind == "pct":
            return str(int(self.container or 0))
        return shlex.quote(str(self.container or ""))

    def shell(self) -> str:
        """The host command line that starts a long-lived shell inside the target."""
        if self.kind == "pct":
            return f"{shlex.quote(self.pct)} exec {self._ref()} -- /bin/sh"
        if self.is_engine:
            return f"{shlex.quote(self.tool)} exec -i {self._ref()} /bin/sh"
        return "/bin/sh"

    def wrap(self, command: str) -> str:
        """A host command line that runs ``command`` (a shell string) inside the target."""
        if self.kind == "pct":
            return f"{shlex.quote(self.pct)} exec {self._ref()} -- /bin/sh -c {shlex.quote(command)}"
        if self.is_engine:
            return f"{shlex.quote(self.tool)} exec -i {self._ref()} /bin/sh -c {shlex.quote(command)}"
        return f"/bin/sh -c {shlex.quote(command)}"

    def pct_command(self, *args: str | int) -> str:
        """``pct ARGS…`` on the host, e.g. ``pct_command("status")`` → ``pct status 200``."""
        head, *rest = [str(a) for a in args]
        return " ".join([shlex.quote(self.pct), shlex.quote(head), str(int(self.container or 0)), *map(shlex.quote, rest)])

    def engine_command(self, *args: str) -> str:
        """``docker ARGS… NAME`` (or podman) on the host, e.g. ``engine_command("restart")``."""
        return " ".join([shlex.quote(self.tool), *map(shlex.quote, args), self._ref()])

    # -- looking after the container, from the host --------------------------------------------
    def status_command(self) -> str:
        """A host command whose output :meth:`parse_status` reads."""
        if self.kind == "pct":
            return self.pct_command("status")
        return self.engine_command("inspect", "--format", "{{.State.Status}}")

    def parse_status(self, output: str) -> str | None:
        """``"running"``, ``"stopped"`` (any state a start would cure) or None (not a status)."""
        text = output.strip()
        if self.kind == "pct":
            if "status: running" in text:
                return "running"
            return "stopped" if "status: stopped" in text else None
        first = text.splitlines()[0].strip() if text else ""
        if first == "running":
            return "running"
        return "stopped" if first in ("exited", "created", "stopped", "dead", "paused", "configured", "restarting") else None

    def restart_command(self) -> str:
        """``pct reboot CTID`` / ``docker restart NAME``: every process in the container dies."""
        return self.pct_command("reboot") if self.kind == "pct" else self.engine_command("restart")

    @property
    def restart_word(self) -> str:
        """What the UI calls it: Proxmox reboots a container, docker and podman restart one."""
        return "reboot" if self.kind == "pct" else "restart"

    def start_hint(self) -> str:
        """The command a person runs on the host to start the stopped container."""
        return self.pct_command("start") if self.kind == "pct" else self.engine_command("start")

    def list_hint(self) -> str:
        return f"{self.pct} list" if self.kind == "pct" else f"{self.tool} ps -a"

    def describe(self) -> str:
        if self.kind == "pct":
            return f"pct {self.container}"
        if self.is_engine:
            return f"{self.kind} container {self.container}"
        return "Slurm login node" if self.kind == "slurm" else "host"
