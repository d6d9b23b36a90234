"""What the real Podman (:mod:`.podman`) and real Docker (:mod:`.docker_real`) harnesses share:
running the engine's CLI, a container's directories, a container running the lab's reaping init
as PID 1, and its PID 1 as the host sees it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .sshd import Lab

__all__ = ["RealEngine"]


class RealEngine:
    """A real container engine of one lab; subclasses set ``name``, ``image`` and ``dir`` and say how
    the CLI is called (:meth:`_command`, :meth:`_env`) and their own ``run`` flags (:meth:`_run_flags`:
    limits, how /usr and the lab directory are mounted)."""

    name = "engine"
    image = ""
    lab: Lab
    dir: Path
    _names: list[str]

    def _command(self, cli: str | None) -> list[str]:
        raise NotImplementedError

    def _env(self) -> dict[str, str] | None:
        return None

    def _run_flags(self, lab_dir: str) -> list[str]:
        raise NotImplementedError

    def run(self, *args: str, input: bytes | None = None, check: bool = True, timeout: float = 120,
            cli: str | None = None) -> subprocess.CompletedProcess[str]:
        """``ENGINE ARGS`` (``cli``: another CLI binary than the harness's own, where the engine has one)."""
        r = subprocess.run([*self._command(cli), *args], input=input, capture_output=True, timeout=timeout, env=self._env(),
                           stdin=None if input is not None else subprocess.DEVNULL)
        out = subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace"))
        if check and r.returncode != 0:
            raise RuntimeError(f"{self.name} {' '.join(args)} exited {r.returncode}: {out.stderr.strip()}")
        return out

    def container_dir(self, name: str) -> Path:
        return self.dir / "containers" / name

    def workspace(self, name: str) -> Path:
        return self.container_dir(name) / "workspace"

    def create(self, name: str) -> str:
        """Run a container called ``name`` (PID 1 the lab's reaping init); its id."""
        ctdir = self.container_dir(name)
        self.workspace(name).mkdir(parents=True, exist_ok=True)
        lab_dir = str(self.lab.dir)
        self._names.append(name)  # removed by close() even when the run fails half-way
        return self.run("run", "-d", "--name", name, "--hostname", name, "--network", "none", *self._run_flags(lab_dir),
                        "--tmpfs", "/tmp", self.image, "/usr/bin/python3", "-IS", str(self.lab.libexec_dir / "init"),
                        str(ctdir), lab_dir).stdout.strip()

    def init_pid(self, name: str) -> int | None:
        """PID 1's host pid (``{{.State.Pid}}``), None when it is not running."""
        r = self.run("inspect", "--format", "{{.State.Pid}}", name, check=False)
        pid = r.stdout.strip()
        return int(pid) if r.returncode == 0 and pid.isdigit() and pid != "0" else None
