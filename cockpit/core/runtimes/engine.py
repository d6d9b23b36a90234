"""``runtime = "docker"`` and ``"podman"``: a container of that engine on the SSH host.

Both are driven through the same docker-compatible CLI (``docker exec -i NAME /bin/sh``,
``inspect --format {{.State.Status}}``, ``restart``), so one class serves both, parametrised by
the engine's name and its command; they *restart* a container, and ``run --init`` gives one a
PID 1 that reaps.
"""

from __future__ import annotations

import shlex
from typing import Any

from ..remote.startfail import StartWords
from .common import BaseRuntime

__all__ = ["EngineRuntime", "STOPPED_STATES"]

#: ``{{.State.Status}}`` values a start would cure
STOPPED_STATES = ("exited", "created", "stopped", "dead", "paused", "configured", "restarting")


class EngineRuntime(BaseRuntime):
    """A docker or podman container (``engine``: the name; ``tool``: its command on the host)."""

    in_container = True
    can_reboot = True
    restart_word = "restart"
    reboot_refusal = ""

    def __init__(self, engine: str, container: int | str | None = None, tool: str | None = None) -> None:
        super().__init__(container)
        self.kind = engine
        self.tool = tool or engine
        self.zombie_engine = engine
        self.start_words = StartWords(engine, True, f"{engine} ps -a", "restart", f"host with {engine}")

    @classmethod
    def docker(cls, cfg: Any) -> EngineRuntime:
        return cls("docker", cfg.target.container, cfg.target.docker)

    @classmethod
    def podman(cls, cfg: Any) -> EngineRuntime:
        return cls("podman", cfg.target.container, cfg.target.podman)

    def _ref(self) -> str:
        return shlex.quote(str(self.container or ""))

    def describe(self) -> str:
        return f"{self.kind} container {self.container}"

    def engine_command(self, *args: str) -> str:
        """``docker ARGS… NAME`` (or podman) on the host, e.g. ``engine_command("restart")``."""
        return " ".join([shlex.quote(self.tool), *map(shlex.quote, args), self._ref()])

    def shell(self) -> str:
        return f"{shlex.quote(self.tool)} exec -i {self._ref()} /bin/sh"

    def wrap(self, command: str) -> str:
        return f"{shlex.quote(self.tool)} exec -i {self._ref()} /bin/sh -c {shlex.quote(command)}"

    def enter_argv(self) -> list[str] | None:
        return [self.tool, "exec", "-it", str(self.container), "/bin/sh", "-c",
                "command -v bash >/dev/null 2>&1 && exec bash -l || exec sh -l"]

    def where_text(self, *, host: bool = False) -> str:
        if host:
            return f", on the host ({self.kind} container {self.container})"
        return f", inside {self.kind} container {self.container} ({self.kind} exec -i {self.container} /bin/sh -c …)"

    def status_command(self) -> str:
        return self.engine_command("inspect", "--format", "{{.State.Status}}")

    def parse_status(self, output: str) -> str | None:
        text = output.strip()
        first = text.splitlines()[0].strip() if text else ""
        if first == "running":
            return "running"
        return "stopped" if first in STOPPED_STATES else None

    def stopped_detail(self, output: str) -> str:
        return f"container {self.container} is stopped ({output.strip()})"

    def restart_command(self) -> str:
        return self.engine_command("restart")

    def start_hint(self) -> str:
        return self.engine_command("start")

    def list_hint(self) -> str:
        return f"{self.tool} ps -a"

    def lock_identity(self, cfg: Any) -> str:
        return str(self.container)
