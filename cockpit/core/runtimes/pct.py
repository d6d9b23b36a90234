"""``runtime = "pct"``: a Proxmox LXC container on the SSH host, entered with ``pct exec CTID --``.

Inside ``pct exec`` PATH is minimal (``/sbin:/bin:/usr/sbin:/usr/bin``), so cockpit's own
commands use only tools found there.  The host can list the container's GPU processes
(``lxc-info``) and read its kernel log; Proxmox *reboots* a container.
"""

from __future__ import annotations

import shlex
from typing import Any

from ..remote.startfail import StartWords
from .common import BaseRuntime

__all__ = ["PctRuntime", "PCT_EXEC_PATH"]

#: the PATH that ``pct exec`` gives a command inside a container
PCT_EXEC_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"


class PctRuntime(BaseRuntime):
    """A Proxmox container: ``pct exec CTID -- /bin/sh``; ``pct status`` / ``pct reboot`` on the host."""

    kind = "pct"
    in_container = True
    can_reboot = True
    restart_word = "reboot"
    reboot_refusal = ""
    running_text = "status: running"
    reads_host_kmsg = True
    kmsg_refusal = ""
    start_words = StartWords("pct", True, "pct list", "reboot", "Proxmox host")

    def __init__(self, container: int | str | None = None, pct: str = "pct") -> None:
        super().__init__(container)
        self.pct = self.tool = pct
        self.gpu_host_container = int(container) if isinstance(container, int) else None

    @classmethod
    def from_config(cls, cfg: Any) -> PctRuntime:
        return cls(cfg.target.container, cfg.target.pct)

    @property
    def ctid(self) -> int:
        return int(self.container or 0)

    def describe(self) -> str:
        return f"pct {self.container}"

    def pct_command(self, *args: str | int) -> str:
        """``pct ARGS…`` on the host, e.g. ``pct_command("status")`` → ``pct status 200``."""
        head, *rest = [str(a) for a in args]
        return " ".join([shlex.quote(self.pct), shlex.quote(head), str(self.ctid), *map(shlex.quote, rest)])

    def shell(self) -> str:
        return f"{shlex.quote(self.pct)} exec {self.ctid} -- /bin/sh"

    def wrap(self, command: str) -> str:
        return f"{shlex.quote(self.pct)} exec {self.ctid} -- /bin/sh -c {shlex.quote(command)}"

    def enter_argv(self) -> list[str] | None:
        return [self.pct, "enter", str(self.ctid)]

    def where_text(self, *, host: bool = False) -> str:
        if host:
            return f", on the Proxmox host (container {self.container})"
        return f", inside container {self.container} (pct exec {self.container} -- /bin/sh -c …)"

    def status_command(self) -> str:
        return self.pct_command("status")

    def parse_status(self, output: str) -> str | None:
        text = output.strip()
        if "status: running" in text:
            return "running"
        return "stopped" if "status: stopped" in text else None

    def restart_command(self) -> str:
        return self.pct_command("reboot")

    def start_hint(self) -> str:
        return self.pct_command("start")

    def list_hint(self) -> str:
        return f"{self.pct} list"

    def lock_identity(self, cfg: Any) -> str:
        return str(self.container)
