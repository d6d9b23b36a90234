"""The command that opens an interactive shell inside the target (built from config, never typed).

``ssh -t -a -o StrictHostKeyChecking=yes [-p PORT] [-i KEY]… [-o UserKnownHostsFile=…] [user@]HOST
pct enter CTID`` for a Proxmox container; ``ssh -t … HOST 'cd WORKDIR; exec "${SHELL:-/bin/sh}" -l'`` for a plain SSH host;
``$SHELL`` in the workdir for the local transport (the demo), or ``pct enter CTID`` locally when a
local pct (the lab's emulator) is configured.

The same safety as cockpit's own connection, whatever ``~/.ssh/config`` says (options on the command
line win over it): ``StrictHostKeyChecking=yes`` (a host key not in known_hosts is refused, never
accepted or asked about: cockpit reached this host with a key it already trusted), and ``-a`` (no
agent forwarding) unless ``[ssh] forward_agent = true`` (then ``-A``).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Any

__all__ = ["ShellCommand", "shell_command"]


@dataclass(frozen=True)
class ShellCommand:
    argv: list[str]
    cwd: str | None = None

    @property
    def display(self) -> str:
        return shlex.join(self.argv)


def _local(cfg: Any, p: str) -> str:
    """A local path from the config, relative to the config file's directory."""
    path = os.path.expanduser(p)
    return path if os.path.isabs(path) else os.path.join(str(cfg.base_dir), path)


def shell_command(cfg: Any, *, environ: dict[str, str] | None = None) -> ShellCommand:
    env = os.environ if environ is None else environ
    t = cfg.target
    engine_shell = "command -v bash >/dev/null 2>&1 && exec bash -l || exec sh -l"
    if t.transport == "local":
        if t.runtime == "pct":
            return ShellCommand([t.pct, "enter", str(int(t.container))])
        if t.runtime in ("docker", "podman"):
            tool = t.docker if t.runtime == "docker" else t.podman
            return ShellCommand([tool, "exec", "-it", str(t.container), "/bin/sh", "-c", engine_shell])
        wd = cfg.job.workdir
        return ShellCommand([env.get("SHELL") or "/bin/sh"], cwd=wd if wd and os.path.isdir(wd) else None)
    s = cfg.ssh
    argv = ["ssh", "-t", "-A" if s.forward_agent else "-a", "-o", "StrictHostKeyChecking=yes"]
    if t.port:
        argv += ["-p", str(int(t.port))]
    ids = s.identity_file if isinstance(s.identity_file, list) else ([s.identity_file] if s.identity_file else [])
    for key in ids:
        argv += ["-i", _local(cfg, key)]
    if s.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={_local(cfg, s.known_hosts)}"]
    if s.config_file:
        argv += ["-F", _local(cfg, s.config_file)]
    argv.append(f"{t.user}@{t.host}" if t.user else t.host)
    if t.runtime == "pct":
        argv.append(f"{shlex.quote(t.pct)} enter {int(t.container)}")
    elif t.runtime in ("docker", "podman"):
        tool = t.docker if t.runtime == "docker" else t.podman
        argv.append(shlex.join([tool, "exec", "-it", str(t.container), "/bin/sh", "-c", engine_shell]))
    else:
        argv.append(f"cd {shlex.quote(cfg.job.workdir)} 2>/dev/null; exec \"${{SHELL:-/bin/sh}}\" -l")
    return ShellCommand(argv)
