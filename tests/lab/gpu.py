"""GPU users in the lab: a container with GPU passthrough, and processes holding GPU memory.

A Proxmox container gets a GPU with device rules and bind mounts in its config::

    lxc.cgroup2.devices.allow: c 195:* rwm
    lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file

:func:`add_gpu_container` writes the same lines (the sources are the lab's stand-ins for the
device nodes, ``<lab>/dev/nvidia*``): the pct emulator gives that container its own ``/dev``
with them bound in, so ``/dev/nvidia*`` exist inside it only, as on a real host.  A process holds
GPU memory with ``jobsim.py --gpu-mem MIB`` (see ``bin/nvidia-smi``): :func:`host_gpu_user`
starts one on the host itself, outside every container.  :func:`container_sshd` makes a
"plain SSH target" that is a container (an sshd of its own inside it, as in a Docker image with
sshd): cockpit reaches it without any way to the host.

    from tests.lab.gpu import add_gpu_container, host_gpu_user
    add_gpu_container(lab, 210)
    lab.exec_in(210, lab.jobsim_command("--gpu-mem", 70000, "--steps", 0) + " >/dev/null 2>&1 &")
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .sshd import SETPRIV, SSHD, Lab, LabError
from .util import free_port, ssh_banner, wait_for

__all__ = ["add_gpu_container", "host_gpu_user", "gpu_contexts", "container_sshd", "DEVICES"]

#: the device nodes a CUDA process opens besides its GPU's
DEVICES = ("nvidiactl", "nvidia-uvm")


def add_gpu_container(lab: Lab, ctid: int, *, gpus: tuple[int, ...] = (0,), **options: Any) -> int:
    """Define and start container ``ctid`` with ``/dev/nvidiaN`` (each of ``gpus``),
    ``/dev/nvidiactl`` and ``/dev/nvidia-uvm`` passed through, as Proxmox configures it."""
    dev = lab.dir / "dev"
    dev.mkdir(exist_ok=True)
    entries = [["lxc.cgroup2.devices.allow", "c 195:* rwm"], ["lxc.cgroup2.devices.allow", "c 508:* rwm"]]
    for name in [f"nvidia{i}" for i in gpus] + list(DEVICES):
        (dev / name).touch()
        entries.append(["lxc.mount.entry", f"{dev / name} dev/{name} none bind,optional,create=file"])
    return lab.add_container(ctid, lxc=entries, **options)


def host_gpu_user(lab: Lab, mib: int, *args: object, gpu: int = 0) -> subprocess.Popen[bytes]:
    """A process on the host itself (outside every container) holding ``mib`` MiB on GPU ``gpu``:
    a jobsim that steps for ever.  The caller kills it."""
    argv = lab.jobsim_argv("--gpu-mem", mib, "--gpu", gpu, "--steps", 0, "--interval", 0.5, *args)
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def gpu_contexts(lab: Lab) -> list[dict[str, Any]]:
    """The context files in the lab (held or not): what the emulated driver reads."""
    d = Path(lab.state_dir) / "gpu-ctx"
    out = []
    for p in sorted(d.glob("ctx-*.json")) if d.is_dir() else []:
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue
    return out


@contextmanager
def container_sshd(lab: Lab, ctid: int) -> Iterator[tuple[int, Path]]:
    """An sshd running *inside* container ``ctid`` (its PID namespace; the network is the host's)
    on a port of its own: yields ``(port, known_hosts)``.  The lab's keys and user; it is killed
    at the end (and dies with the ``pct exec`` that runs it)."""
    d = lab.container_dir(ctid)
    port = free_port(lab.host)
    conf = d / "sshd_config"
    text = lab.sshd_config.read_text().replace(f"Port {lab.port}\n", f"Port {port}\n")
    conf.write_text(text.replace(f"PidFile {lab.dir / 'sshd.pid'}", f"PidFile {d / 'sshd.pid'}"))
    kind, blob = (lab.dir / "ssh_host_ed25519_key.pub").read_text().split()[:2]
    known = d / "known_hosts"
    known.write_text(f"[{lab.host}]:{port} {kind} {blob}\n")
    log = open(d / "sshd.log", "ab")
    try:
        proc = subprocess.Popen([str(lab.pct_path), "exec", str(ctid), "--", SETPRIV, "--pdeathsig", "KILL", "--",
                                 SSHD, "-D", "-e", "-f", str(conf)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env={"PATH": lab.path_env, "HOME": "/root"})
    finally:
        log.close()
    try:
        def up() -> bool:
            if proc.poll() is not None:
                raise LabError(f"sshd in CT {ctid} exited with {proc.returncode}: {(d / 'sshd.log').read_text()[-2000:]}")
            return ssh_banner(lab.host, port, timeout=0.5) is not None

        wait_for(up, 15, message=f"sshd in CT {ctid} on port {port}")
        yield port, known
    finally:
        proc.kill()
        proc.wait(10)
