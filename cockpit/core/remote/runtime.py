"""How to get a command *inside* the target: the container-runtime wrappers.

``runtime = "pct"`` wraps with ``pct exec CTID -- …``; ``runtime = "none"`` runs on the host.
Every command string is built with :func:`shlex.quote` from config values.  Inside ``pct exec``
PATH is minimal (``/sbin:/bin:/usr/sbin:/usr/bin``), so cockpit's own commands use only tools
found there.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

__all__ = ["Runtime", "PCT_EXEC_PATH"]

#: the PATH that ``pct exec`` gives a command inside a container
PCT_EXEC_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"


@dataclass(frozen=True)
class Runtime:
    kind: str = "none"  # "pct" | "none" | "slurm" (a login node: commands run on it, jobs go through sbatch)
    container: int | None = None
    pct: str = "pct"

    @property
    def in_container(self) -> bool:
        return self.kind == "pct"

    def shell(self) -> str:
        """The host command line that starts a long-lived shell inside the target."""
        if self.kind == "pct":
            return f"{shlex.quote(self.pct)} exec {int(self.container or 0)} -- /bin/sh"
        return "/bin/sh"

    def wrap(self, command: str) -> str:
        """A host command line that runs ``command`` (a shell string) inside the target."""
        if self.kind == "pct":
            return f"{shlex.quote(self.pct)} exec {int(self.container or 0)} -- /bin/sh -c {shlex.quote(command)}"
        return f"/bin/sh -c {shlex.quote(command)}"

    def pct_command(self, *args: str | int) -> str:
        """``pct ARGS…`` on the host, e.g. ``pct_command("status")`` → ``pct status 200``."""
        head, *rest = [str(a) for a in args]
        return " ".join([shlex.quote(self.pct), shlex.quote(head), str(int(self.container or 0)), *map(shlex.quote, rest)])

    def describe(self) -> str:
        return f"pct {self.container}" if self.kind == "pct" else ("Slurm login node" if self.kind == "slurm" else "host")
