"""A real Docker beside the lab: a ``dockerd`` of the lab's own, containers it runs, reached through
the lab's sshd.

The engines' CLI is otherwise emulated (``bin/docker``); this is the real thing where it can run:
Debian's ``docker.io`` (dockerd 20.10 with its own containerd and runc).  No systemd: the lab starts
one ``dockerd`` itself, with everything of its own in the lab directory (``--data-root``,
``--exec-root``, a unix socket, an empty ``--config-file`` so the machine's ``daemon.json`` stays
out), no networking to set up (``--bridge=none --iptables=false --ip6tables=false``; containers get
``--network none``), and whichever storage driver works here (overlay2 where the lab directory
allows it, else ``vfs``).  The daemon dies with the process that started it (``setpriv --pdeathsig``),
and ``close()`` removes every container, stops the daemon and its containerd, and kills any shim
left behind, so nothing outlives the module that used it.

No registry can be reached, so the image is imported from a tarball made here (``docker import``):
the same root file system as the real Podman's (``tests/lab/podman.py``), whose ``/usr`` is the
host's, bound read-only.  PID 1 is the lab's reaping ``init`` (it exits when the lab that owns it is
gone).  The lab directory is bound in non-recursively: the daemon's own mounts under it (other
containers' root file systems, network namespaces) stay out of each container.

cockpit is pointed at it with ``[target] docker = "<wrapper>"``: a two-line script that sets
``DOCKER_HOST`` to the lab daemon's socket and runs Debian's ``docker`` CLI.  What comes back
(output, error texts, exit codes) is Docker's own.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import threading

from .podman import _rootfs_tar
from .real_engine import RealEngine
from .sshd import HOST_PATH, SETPRIV, Lab
from .util import WaitTimeout, pid_alive, pids_where, wait_for

IMAGE = "cockpit-lab-rootfs:1"


def _tool(name: str, packaged: str) -> str:
    """Debian's binary where it is installed, else the one on the host's PATH (``packaged`` if none)."""
    if os.access(packaged, os.X_OK):
        return packaged
    return shutil.which(name, path=HOST_PATH) or packaged


DOCKERD = _tool("dockerd", "/usr/sbin/dockerd")
#: the CLI that comes with the daemon (a newer ``docker`` earlier on the PATH is not the one used)
CLI = _tool("docker", "/usr/bin/docker")


def real_docker_unavailable_reason() -> str | None:
    """Why a real Docker container cannot run here, or None when it can."""
    for tool, path in (("dockerd", DOCKERD), ("docker", CLI), ("containerd", _tool("containerd", "/usr/bin/containerd")),
                       ("runc", _tool("runc", "/usr/sbin/runc"))):
        if not os.access(path, os.X_OK):
            return f"{tool} is not installed (apt-get install docker.io; ./scripts/test installs it)"
    if os.geteuid() != 0:
        return "a dockerd of the lab's own needs root (rootless Docker needs subuid ranges and rootlesskit)"
    return None


class RealDocker(RealEngine):
    """A dockerd of one lab and its containers; ``close()`` leaves nothing running."""

    name, image = "docker", IMAGE

    def __init__(self, lab: Lab, *, storage_driver: str | None = None) -> None:
        self.lab = lab
        self.dir = lab.dir / "docker-real"
        self.exec_root = lab.dir / "dx"  # containerd's socket lives under it: keep the path short
        self.socket = self.dir / "docker.sock"
        self.docker = self.dir / "docker"  # the wrapper cockpit runs: [target] docker = "<this>"
        self.host = f"unix://{self.socket}"
        self._daemon: subprocess.Popen[bytes] | None = None
        self.driver = ""  # the storage driver the daemon chose (overlay2, vfs)
        self._names: list[str] = []
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "daemon.json").write_text("{}\n")
        (self.dir / "cli").mkdir(exist_ok=True)
        env = f"DOCKER_HOST={shlex.quote(self.host)} DOCKER_CONFIG={shlex.quote(str(self.dir / 'cli'))}"
        self.docker.write_text(f"#!/bin/sh\n{env} exec {CLI} \"$@\"\n")
        self.docker.chmod(0o755)
        try:
            self._start(storage_driver)
            if storage_driver is None and not self._can_run():
                self._stop_daemon()  # overlay2 chosen but not usable here (a nested overlay): vfs
                shutil.rmtree(self.dir / "data", ignore_errors=True)
                self._start("vfs")
                if not self._can_run():
                    raise RuntimeError(f"dockerd runs no container here:\n{self.log_tail()}")
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------------------ daemon
    def _start(self, driver: str | None) -> None:
        argv = [DOCKERD, "--data-root", str(self.dir / "data"), "--exec-root", str(self.exec_root),
                "-H", self.host, "--pidfile", str(self.dir / "dockerd.pid"),
                "--config-file", str(self.dir / "daemon.json"),
                "--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false"]
        if driver:
            argv += ["--storage-driver", driver]
        if threading.current_thread() is threading.main_thread() and os.access(SETPRIV, os.X_OK):
            # the daemon gets SIGTERM when the test process that started it dies (as the lab's sshd)
            argv = [SETPRIV, "--pdeathsig", "TERM", "--", *argv]
        log = open(self.dir / "dockerd.log", "ab")
        try:
            self._daemon = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True)
        finally:
            log.close()
        daemon = self._daemon

        def up() -> bool:
            if daemon.poll() is not None:
                raise RuntimeError(f"dockerd exited {daemon.returncode}:\n{self.log_tail()}")
            return self.socket.exists() and self.run("version", "--format", "{{.Server.Version}}", check=False, timeout=10).returncode == 0

        wait_for(up, 60, lambda: f"dockerd did not answer on {self.socket}:\n{self.log_tail()}", interval=0.05)
        self.driver = self.run("info", "--format", "{{.Driver}}").stdout.strip()

    def _can_run(self) -> bool:
        """Import the image and run one throw-away container in it."""
        self.run("import", "-", IMAGE, input=_rootfs_tar())
        r = self.run("run", "--rm", "--network", "none", "-v", "/usr:/usr:ro", IMAGE, "/usr/bin/true", check=False)
        return r.returncode == 0

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join((self.dir / "dockerd.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no dockerd.log)"

    def _command(self, cli: str | None) -> list[str]:
        return [cli or CLI]

    def _env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "HOME": "/root", "LANG": "C.UTF-8",
                "DOCKER_HOST": self.host, "DOCKER_CONFIG": str(self.dir / "cli")}

    def _run_flags(self, lab_dir: str) -> list[str]:
        return ["-v", "/usr:/usr:ro", "--mount", f"type=bind,source={lab_dir},target={lab_dir},bind-nonrecursive=true"]

    def remove(self, name: str) -> None:
        self.run("rm", "-f", name, check=False)

    def container_id(self, name: str) -> str:
        return self.run("inspect", "--format", "{{.Id}}", name).stdout.strip()

    # ----------------------------------------------------------------------------- cleanup
    def _ours(self, argv: list[bytes]) -> bool:
        """A process of this daemon: dockerd, its containerd and the shims (they name our paths)."""
        marks = (str(self.socket).encode(), str(self.exec_root).encode())
        return any(m in a for a in argv for m in marks)

    def leftovers(self) -> list[int]:
        """Pids still running that belong to this daemon (dockerd, containerd, shims)."""
        return pids_where(self._ours)

    def _stop_daemon(self) -> None:
        d, self._daemon = self._daemon, None
        if d is None:
            return
        if d.poll() is None:
            d.terminate()
            try:
                d.wait(30)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait(10)
        try:
            wait_for(lambda: not [p for p in self.leftovers() if pid_alive(p)], 15)
        except WaitTimeout:
            for pid in self.leftovers():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            wait_for(lambda: not [p for p in self.leftovers() if pid_alive(p)], 10,
                     lambda: f"dockerd's processes survive SIGKILL: {self.leftovers()}")

    def _unmount_leftovers(self) -> None:
        """Mounts the daemon left under the lab directory (a daemon that had to be killed)."""
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f]
        roots = (str(self.dir) + "/", str(self.exec_root) + "/")
        for point in reversed(points):
            if point.startswith(roots):
                subprocess.run(["umount", "-l", point], capture_output=True, check=False)

    def close(self) -> None:
        """Remove every container, stop the daemon (and its containerd), remove its storage."""
        if self._daemon is not None and self._daemon.poll() is None:
            ids = self.run("ps", "-aq", check=False, timeout=30).stdout.split()
            if ids:
                self.run("rm", "-f", *ids, check=False, timeout=60)
        self._names.clear()
        self._stop_daemon()
        self._unmount_leftovers()
        for d in (self.dir / "data", self.exec_root):
            shutil.rmtree(d, ignore_errors=True)
