"""The command that opens an interactive shell inside the target (built from config, never typed).

The runtime says how the target is entered (:meth:`~cockpit.core.runtimes.base.Runtime.interactive_argv`):
``ssh -t -a -o StrictHostKeyChecking=yes [-p PORT] [-i KEY]… [-o UserKnownHostsFile=…] [user@]HOST
pct enter CTID`` for a Proxmox container, ``docker exec -it NAME …`` for an engine's, a login shell in
the workdir for a plain SSH host; ``$SHELL`` in the workdir for the local transport (the demo), or
the runtime's own command locally when one is configured (the lab's pct emulator).

The ssh part is :func:`cockpit.core.remote.sshopts.ssh_argv`, the same safety as cockpit's own
connection whatever ``~/.ssh/config`` says: ``StrictHostKeyChecking=yes`` and ``-a`` (no agent
forwarding) unless ``[ssh] forward_agent = true``.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from ..core.config import Config
from ..core.runtimes import runtime_for

__all__ = ["ShellCommand", "shell_command"]


@dataclass(frozen=True)
class ShellCommand:
    argv: list[str]
    cwd: str | None = None

    @property
    def display(self) -> str:
        return shlex.join(self.argv)


def shell_command(cfg: Config, *, environ: dict[str, str] | None = None) -> ShellCommand:
    """The interactive shell the ``!`` key opens, for ``cfg``'s target."""
    argv, cwd = runtime_for(cfg).interactive_argv(cfg, dict(os.environ if environ is None else environ))
    return ShellCommand(argv, cwd)
