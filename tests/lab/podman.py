"""A real Podman beside the lab: containers that Podman itself runs, reached through the lab's sshd.

The engines' CLI is otherwise emulated (``bin/docker``); this is the real thing where it can run.
On the suite's machines Podman (Debian's 4.3) starts a container once it is told to leave the
machine's limits alone: runc (crun is not installed), ``vfs`` storage (no overlay in the
sandbox), ``--network none`` (nothing to reach), and ``--ulimit nofile=1024:1024 --ulimit
nproc=1024:1024`` (the sandbox refuses the larger rlimits Podman asks for by default:
``error setting rlimit type 7: operation not permitted``).  No registry can be reached, so the
image is imported from a tarball made here (``podman import``): a root file system whose
``/usr`` is the host's, bound read-only, so the system Python, ``ps`` and the lab's job simulator
work inside.  PID 1 is the lab's reaping ``init`` (it exits when the lab that owns it is gone).

Every call goes through ``RealPodman.podman``, a two-line wrapper that adds the storage and runtime
flags (its own ``--root`` / ``--runroot`` in the lab directory, so nothing is shared with the
machine's Podman); cockpit is pointed at it with ``[target] podman = "<wrapper>"``.  What comes
back (output, error texts, exit codes) is Podman's own.
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import tarfile

from .real_engine import RealEngine
from .sshd import Lab

IMAGE = "localhost/cockpit-lab-rootfs:1"
LIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")


def real_podman_unavailable_reason() -> str | None:
    """Why a real Podman container cannot run here, or None when it can."""
    for tool in ("podman", "runc"):
        if shutil.which(tool) is None and not os.access(f"/usr/sbin/{tool}", os.X_OK):
            return f"{tool} is not installed (apt-get install podman runc; ./scripts/test installs them)"
    if os.geteuid() != 0:
        return "a real Podman container needs root here (rootless Podman needs subuid ranges and user namespaces)"
    return None


def _rootfs_tar() -> bytes:
    """A root file system with mount points and the merged-/usr links; /usr itself is bound in."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("usr", "tmp", "proc", "sys", "dev", "etc", "run", "root", "var", "var/tmp"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d in ("tmp", "var/tmp") else 0o755
            tar.addfile(info)
        for link in ("bin", "sbin", "lib", "lib64"):
            if os.path.islink(f"/{link}") or os.path.isdir(f"/usr/{link}"):
                info = tarfile.TarInfo(link)
                info.type, info.linkname = tarfile.SYMTYPE, f"usr/{link}"
                tar.addfile(info)
    return buf.getvalue()


class RealPodman(RealEngine):
    """Real Podman containers for one lab; ``close()`` removes them and the storage."""

    name, image = "podman", IMAGE

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.dir = lab.dir / "podman-real"
        self.podman = self.dir / "podman"
        self._names: list[str] = []
        storage = self.dir / "storage"
        runroot = lab.dir / "pr"  # Podman refuses a runroot longer than 50 characters
        for d in (storage / "root", runroot, storage / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        binary = shutil.which("podman") or "/usr/bin/podman"
        flags = ["--root", str(storage / "root"), "--runroot", str(runroot), "--tmpdir", str(storage / "tmp"),
                 "--storage-driver", "vfs", "--runtime", "runc", "--events-backend", "file", "--cgroup-manager", "cgroupfs"]
        self.podman.write_text(f"#!/bin/sh\nexec {shlex.quote(binary)} {shlex.join(flags)} \"$@\"\n")
        self.podman.chmod(0o755)
        self.run("import", "-", IMAGE, input=_rootfs_tar())

    def _command(self, cli: str | None) -> list[str]:
        return [str(self.podman)]

    def _run_flags(self, lab_dir: str) -> list[str]:
        return [*LIMITS, "-v", "/usr:/usr:ro", "-v", f"{lab_dir}:{lab_dir}"]

    def close(self) -> None:
        for name in self._names:
            self.run("rm", "-f", "-t", "0", name, check=False)
        self._names.clear()
