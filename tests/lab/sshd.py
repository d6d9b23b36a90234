"""The lab: a real OpenSSH ``sshd`` on 127.0.0.1 with a Proxmox-like host behind it.

``Lab`` builds a directory (outside /tmp: each container mounts its own private /tmp, so a lab under
/tmp would be invisible inside the containers) holding::

    sshd_config  ssh_host_ed25519_key(.pub)  id_ed25519(.pub)  authorized_keys  known_hosts
    ssh_config   sshd.pid  sshd.log  owner.lock
    bin/         pct, docker/podman, nvidia-smi, dmesg, lxc-info (on the PATH of every command run through this sshd)
    libexec/     init, sleepy-init, jobsim.py
    state/       gpu.json, node
    containers/<ID>/conf.json, init.json, console.log, workspace/

Use it as a context manager, or by hand with ``python -m tests.lab up``.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .util import WaitTimeout, children_of, free_port, pid_alive, proc_stat, ssh_banner, wait_for

SRC = Path(__file__).resolve().parent
SSHD = "/usr/sbin/sshd"
SETPRIV = "/usr/bin/setpriv"
PRIVSEP_DIR = "/run/sshd"  # compiled into Debian's sshd; the ssh.service normally creates it
CONTAINER_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_CT = 200
#: sshd's MaxSessions in the lab, as on a stock OpenSSH
DEFAULT_MAX_SESSIONS = 10

_live_labs: set[Lab] = set()
_live_lock = threading.Lock()


def _python_for_scripts() -> str:
    """Interpreter for the emulators: the system one (stdlib only, and visible in containers)."""
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def lab_unavailable_reason() -> str | None:
    """Why a lab cannot run on this machine, or None when it can."""
    if not sys.platform.startswith("linux"):
        return "the lab needs Linux (PID/mount namespaces)"
    if os.geteuid() != 0:
        return "the lab needs root (sshd as root, unshare/nsenter for the pct emulator)"
    for tool in (SSHD, "/usr/bin/ssh", "/usr/bin/ssh-keygen", "/usr/bin/unshare", "/usr/bin/nsenter"):
        if not os.access(tool, os.X_OK):
            return f"{tool} is not installed (apt-get install openssh-server openssh-client util-linux)"
    try:
        r = subprocess.run(["/usr/bin/unshare", "--pid", "--mount", "--fork", "--mount-proc", "/bin/true"],
                           capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unshare does not work here: {e}"
    if r.returncode != 0:
        return "unshare --pid --mount does not work here: " + r.stderr.decode(errors="replace").strip()
    return None


def _account_locked(user: str) -> bool:
    """True if ``user``'s password field is locked ("!..."): sshd with UsePAM no refuses such users."""
    try:
        with open("/etc/shadow") as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name == user:
                    return rest.startswith("!")
    except OSError:
        pass
    return False


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (str, Path)):
        return json.dumps(str(v), ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)


def to_toml(doc: Mapping[str, Mapping[str, Any]]) -> str:
    """A small TOML writer for the lab configs (tables of scalars, lists and sub-tables)."""
    out: list[str] = []
    for section, table in doc.items():
        if table is None:
            continue
        out.append(f"[{section}]")
        subtables = []
        for k, v in table.items():
            if v is None:
                continue
            if isinstance(v, Mapping):
                subtables.append((k, v))
            else:
                out.append(f"{_toml_key(k)} = {_toml_value(v)}")
        for k, v in subtables:
            out.append("")
            out.append(f"[{section}.{_toml_key(k)}]")
            out.extend(f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in v.items() if vv is not None)
        out.append("")
    return "\n".join(out)


class LabError(RuntimeError):
    pass


class Lab:
    """A real sshd on 127.0.0.1, a pct emulator with namespace containers, an nvidia-smi emulator.

    ``Lab()`` only prepares; ``start()`` (or ``with Lab() as lab``) builds the directory and starts
    sshd.  ``stop()`` takes sshd down (containers keep running, like a host whose sshd died) and
    ``start()`` brings it back on the same port.  ``close()`` stops everything and removes the
    directory (unless ``keep=True``).
    """

    host = "127.0.0.1"

    def __init__(self, dir: str | os.PathLike[str] | None = None, *, port: int | None = None,
                 user: str = "root", node: str = "pve", keep: bool = False) -> None:
        self._given_dir = Path(dir) if dir is not None else None
        self.dir: Path = self._given_dir or Path("/nonexistent-lab")
        self.port: int = port or 0
        self.user = user
        self.node = node
        self.keep = keep
        self._sshd: subprocess.Popen[bytes] | None = None
        self._owner_fd: int | None = None
        self._port_given = bool(port)
        self._client_port: int | None = None
        self._prepared = False
        self._closed = False
        #: sshd's MaxSessions (channels per connection); see :meth:`set_max_sessions`
        self.max_sessions = DEFAULT_MAX_SESSIONS

    # ------------------------------------------------------------------------------------ paths
    @property
    def bin_dir(self) -> Path:
        return self.dir / "bin"

    @property
    def libexec_dir(self) -> Path:
        return self.dir / "libexec"

    @property
    def state_dir(self) -> Path:
        return self.dir / "state"

    @property
    def containers_dir(self) -> Path:
        return self.dir / "containers"

    @property
    def identity_file(self) -> Path:
        return self.dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    @property
    def host_key(self) -> Path:
        return self.dir / "ssh_host_ed25519_key"

    @property
    def sshd_config(self) -> Path:
        return self.dir / "sshd_config"

    @property
    def ssh_config(self) -> Path:
        """An OpenSSH client config with ``Host cockpit-lab`` (to test ~/.ssh/config aliases)."""
        return self.dir / "ssh_config"

    @property
    def sshd_log(self) -> Path:
        return self.dir / "sshd.log"

    @property
    def pct_path(self) -> Path:
        return self.bin_dir / "pct"

    @property
    def nvidia_smi(self) -> Path:
        return self.bin_dir / "nvidia-smi"

    @property
    def jobsim(self) -> Path:
        return self.libexec_dir / "jobsim.py"

    @property
    def gpu_state_file(self) -> Path:
        return self.state_dir / "gpu.json"

    @property
    def path_env(self) -> str:
        """PATH of commands run through the lab's sshd (bin_dir first)."""
        return f"{self.bin_dir}:{HOST_PATH}"

    def container_dir(self, ctid: int) -> Path:
        return self.containers_dir / str(int(ctid))

    def workspace(self, ctid: int = DEFAULT_CT) -> Path:
        """A persistent directory for the container's job (same path inside and outside)."""
        return self.container_dir(ctid) / "workspace"

    # ----------------------------------------------------------------------------- lifecycle
    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> Lab:
        """Prepare the lab directory on first use, then start sshd and wait until it answers."""
        if self._closed:
            raise LabError("this lab was closed")
        if not self._prepared:
            self._prepare()
        if self.sshd_running:
            return self
        for attempt in range(5):
            if not self.port:
                self.port = free_port(self.host)
            self._write_sshd_config()
            try:
                self._spawn_sshd()
                break
            except LabError:
                if attempt == 4 or self._port_given:
                    raise
                self.port = 0  # someone took the port between our probe and sshd's bind: pick another
        self._port_given = True  # restarts keep this port
        if self._client_port != self.port:
            self._write_client_files()
            self._client_port = self.port
        return self

    def stop(self, *, containers: bool = False, drop_connections: bool = True) -> None:
        """Stop sshd (the "sshd down" case).  Open connections are cut too unless
        ``drop_connections=False``; containers keep running unless ``containers=True``."""
        if self._sshd is not None:
            sessions = children_of(self._sshd.pid) if drop_connections else []
            if self._sshd.poll() is None:
                self._sshd.terminate()
                try:
                    self._sshd.wait(10)
                except subprocess.TimeoutExpired:
                    self._sshd.kill()
                    self._sshd.wait(10)
            for pid in sessions:
                _kill(pid, signal.SIGKILL)
            self._sshd = None
        if containers:
            self.stop_containers()

    def restart(self) -> Lab:
        self.stop()
        return self.start()

    def close(self) -> None:
        """Stop every container and sshd, and remove the lab directory (unless keep)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.stop(containers=True)
        finally:
            with _live_lock:
                _live_labs.discard(self)
            if self._owner_fd is not None:
                os.close(self._owner_fd)
                self._owner_fd = None
            if self._prepared and not self.keep:
                shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def sshd_running(self) -> bool:
        return self._sshd is not None and self._sshd.poll() is None

    @property
    def sshd_pid(self) -> int | None:
        return self._sshd.pid if self.sshd_running else None

    def set_max_sessions(self, n: int) -> None:
        """Restart sshd (same port, open connections cut) with ``MaxSessions n``; ``reset()`` puts 10 back."""
        self.max_sessions = int(n)
        if self.sshd_running:
            self.restart()

    def drop_connections(self) -> int:
        """Kill every sshd session process (clients see "connection lost"); sshd keeps listening."""
        if self._sshd is None:
            return 0
        pids = children_of(self._sshd.pid)
        for pid in pids:
            _kill(pid, signal.SIGKILL)
        return len(pids)

    # ------------------------------------------------------------------------------- set-up
    def _prepare(self) -> None:
        reason = lab_unavailable_reason()
        if reason:
            raise LabError(reason)
        if self._given_dir is None:
            base = "/var/tmp" if os.path.isdir("/var/tmp") else None
            self.dir = Path(tempfile.mkdtemp(prefix="cockpit-lab-", dir=base))
        else:
            self.dir = self._given_dir.resolve()
            self.dir.mkdir(parents=True, exist_ok=True)
        if str(self.dir) == "/tmp" or str(self.dir).startswith("/tmp/"):
            raise LabError(f"lab dir {self.dir} is under /tmp, which each container replaces with its own tmpfs")
        os.chmod(self.dir, 0o755)
        with _live_lock:
            _live_labs.add(self)
        _install_atexit()
        # the owner lock: container inits exit once nobody holds it (a crashed session leaks nothing)
        self._owner_fd = os.open(self.dir / "owner.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self._owner_fd, fcntl.LOCK_EX)
        for d in (self.bin_dir, self.libexec_dir, self.state_dir, self.containers_dir):
            d.mkdir(exist_ok=True)
        py = _python_for_scripts()
        for src, dst in ((SRC / "bin" / "pct", self.pct_path), (SRC / "bin" / "nvidia-smi", self.nvidia_smi),
                         (SRC / "bin" / "dmesg", self.bin_dir / "dmesg"),
                         (SRC / "libexec" / "init", self.libexec_dir / "init"),
                         (SRC / "libexec" / "sleepy-init", self.libexec_dir / "sleepy-init"),
                         (SRC / "libexec" / "pct-files", self.libexec_dir / "pct-files"),
                         (SRC / "libexec" / "autodev", self.libexec_dir / "autodev"),
                         (SRC / "bin" / "lxc-info", self.bin_dir / "lxc-info"),
                         (SRC / "bin" / "docker", self.bin_dir / "docker"),
                         (SRC / "bin" / "docker", self.bin_dir / "podman"),
                         (SRC / "jobsim.py", self.jobsim)):
            text = src.read_text()
            if text.startswith("#!"):
                # a fixed interpreter: no PATH lookup (pyenv shims are slow), no site, no env vars
                text = f"#!{py} -IS\n" + text.split("\n", 1)[1]
            dst.write_text(text)
            dst.chmod(0o755)
        (self.state_dir / "node").write_text(self.node + "\n")
        if not Path(PRIVSEP_DIR).is_dir():
            os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        self._keygen(self.host_key, "cockpit-lab-host")
        self._keygen(self.identity_file, "cockpit-lab-user")
        pub = (self.dir / "id_ed25519.pub").read_text().strip()
        (self.dir / "authorized_keys").write_text(pub + "\n")
        self._prepared = True

    @staticmethod
    def _keygen(path: Path, comment: str) -> None:
        for p in (path, path.with_name(path.name + ".pub")):
            if p.exists():
                p.unlink()
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                       check=True, capture_output=True)
        path.chmod(0o600)

    def _write_sshd_config(self) -> None:
        d = self.dir
        self.sshd_config.write_text(
            "\n".join([
                "# generated by tests/lab/sshd.py",
                f"Port {self.port}",
                f"ListenAddress {self.host}",
                f"HostKey {self.host_key}",
                f"PidFile {d / 'sshd.pid'}",
                f"AuthorizedKeysFile {d / 'authorized_keys'}",
                "StrictModes no",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                # without PAM, sshd refuses a locked account ("!" in /etc/shadow) even for keys
                f"UsePAM {'yes' if _account_locked(self.user) else 'no'}",
                "PermitRootLogin prohibit-password",
                f"AllowUsers {self.user}",
                f"MaxSessions {self.max_sessions}",
                "MaxStartups 64:30:128",
                "UseDNS no",
                "PrintMotd no",
                "PrintLastLog no",
                "X11Forwarding no",
                "AllowTcpForwarding yes",
                "AcceptEnv LANG LC_*",
                # how the pct emulator gets on the PATH of `ssh host cmd` (OpenSSH >= 8.7); each lab its own
                # directory for the targets' action locks (two labs on one machine share no /run/lock);
                # SHLVL=1: the user's bash runs no ~/.bashrc for a command (bash sources it for sshd at
                # level 1 only), so the developer's own (a pyenv init: ~0.1 s of CPU per command, shims
                # put before this PATH) stays out of the lab's host, as a stock host's does
                f"SetEnv PATH={self.path_env} COCKPIT_LAB={d} COCKPIT_LOCK_DIR={d}/run-lock SHLVL=1",
                "Subsystem sftp internal-sftp",
                "LogLevel VERBOSE",
                "",
            ])
        )

    def _write_client_files(self) -> None:
        self.write_known_hosts()
        self.ssh_config.write_text(
            "Host cockpit-lab\n"
            f"  HostName {self.host}\n"
            f"  Port {self.port}\n"
            f"  User {self.user}\n"
            f"  IdentityFile {self.identity_file}\n"
            "  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.known_hosts}\n"
            "  StrictHostKeyChecking yes\n"
            "  BatchMode yes\n"
        )

    def host_key_line(self) -> str:
        """The known_hosts line for the current host key: ``[127.0.0.1]:PORT ssh-ed25519 AAAA...``."""
        kind, blob = (self.dir / "ssh_host_ed25519_key.pub").read_text().split()[:2]
        return f"[{self.host}]:{self.port} {kind} {blob}"

    def write_known_hosts(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write a known_hosts that trusts the current host key (default: ``self.known_hosts``)."""
        p = Path(path) if path is not None else self.known_hosts
        p.write_text(self.host_key_line() + "\n")
        return p

    def regenerate_host_key(self, *, update_known_hosts: bool = False) -> None:
        """New host key, sshd restarted on the same port.  ``known_hosts`` keeps the old key (so a
        client now sees a changed host key) unless ``update_known_hosts``."""
        was_running = self.sshd_running
        self.stop(drop_connections=False)
        self._keygen(self.host_key, "cockpit-lab-host")
        if was_running:
            self.start()
        if update_known_hosts:
            self.write_known_hosts()

    def _spawn_sshd(self) -> None:
        argv = [SSHD, "-D", "-e", "-f", str(self.sshd_config)]
        if threading.current_thread() is threading.main_thread() and os.access(SETPRIV, os.X_OK):
            # sshd dies with us even if we are SIGKILLed (the containers have the owner lock)
            argv = [SETPRIV, "--pdeathsig", "TERM", "--", *argv]
        log = open(self.sshd_log, "ab")
        try:
            self._sshd = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True, cwd="/",
            )
        finally:
            log.close()
        proc = self._sshd

        def ready() -> bool:
            if proc.poll() is not None:
                raise LabError(f"sshd exited with {proc.returncode}:\n{self.sshd_log_tail()}")
            return ssh_banner(self.host, self.port, timeout=0.5) is not None

        try:
            wait_for(ready, 15, message=self.sshd_log_tail)
        except (LabError, WaitTimeout):
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            self._sshd = None
            raise LabError(f"sshd did not come up on {self.host}:{self.port}:\n{self.sshd_log_tail()}") from None

    def sshd_log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.sshd_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # --------------------------------------------------------------------------- ssh helpers
    def ssh_argv(self, cmd: str | Sequence[str] | None = None, *, options: Iterable[str] = ()) -> list[str]:
        """A plain OpenSSH client command line for this lab (baseline for benchmarks).  ``-F``: the
        lab's ssh_config, never ``~/.ssh/config`` (ssh finds that through the passwd entry, not HOME)."""
        argv = ["ssh", "-F", str(self.ssh_config), "-p", str(self.port), "-i", str(self.identity_file),
                "-o", "IdentitiesOnly=yes",
                "-o", f"UserKnownHostsFile={self.known_hosts}",
                "-o", "StrictHostKeyChecking=yes",
                "-o", "BatchMode=yes",
                "-o", "ConnectTimeout=10"]
        for opt in options:
            argv += ["-o", opt]
        argv.append(f"{self.user}@{self.host}")
        if cmd is not None:
            argv.append(cmd if isinstance(cmd, str) else shlex.join(cmd))
        return argv

    def ssh(self, cmd: str | Sequence[str], *, timeout: float = 30, input: str | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run a command through the lab's sshd with the OpenSSH client."""
        return subprocess.run(self.ssh_argv(cmd), input=input, capture_output=True, text=True,
                              timeout=timeout, check=check, stdin=None if input is not None else subprocess.DEVNULL)

    def asyncssh_options(self) -> dict[str, Any]:
        """Keyword arguments for ``asyncssh.connect`` to reach this lab."""
        return {"host": self.host, "port": self.port, "username": self.user,
                "client_keys": [str(self.identity_file)], "known_hosts": str(self.known_hosts),
                "config": None}

    # ------------------------------------------------------------------------- containers
    def pct(self, *args: object, input: str | None = None, timeout: float = 60,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """Run the pct emulator locally (not through ssh) with the env an ssh session would have."""
        env = {"PATH": self.path_env, "HOME": "/root", "LANG": "C.UTF-8"}
        return subprocess.run([str(self.pct_path), *map(str, args)], input=input, capture_output=True,
                              text=True, timeout=timeout, check=check, env=env,
                              stdin=None if input is not None else subprocess.DEVNULL)

    def exec_in(self, ctid: int, cmd: str | Sequence[str], *, input: str | None = None,
                timeout: float = 30, check: bool = False) -> subprocess.CompletedProcess[str]:
        """``pct exec CTID -- ...`` locally; a string runs under ``/bin/sh -c``."""
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        return self.pct("exec", ctid, "--", *argv, input=input, timeout=timeout, check=check)

    def add_container(self, ctid: int = DEFAULT_CT, *, reaping_init: bool = True, start: bool = True,
                      hostname: str | None = None, **options: Any) -> int:
        """Define container ``ctid`` (``reaping_init=False``: PID 1 never reaps orphans) and start it.

        Extra ``options`` go to conf.json: pct config keys (``memory``, ``cores``...) and the
        emulator's fault switches ``start_error`` / ``stop_error`` (text printed, exit 255).
        """
        if not self._prepared:
            raise LabError("start the lab first")
        ctid = int(ctid)
        d = self.container_dir(ctid)
        d.mkdir(parents=True, exist_ok=True)
        (d / "workspace").mkdir(exist_ok=True)
        conf = {"arch": "amd64", "cores": 8, "hostname": hostname or f"ct{ctid}", "memory": 65536,
                "net0": f"name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:{ctid // 256 % 256:02X}:{ctid % 256:02X},"
                        "ip=dhcp,type=veth",
                "ostype": "debian", "rootfs": f"local-lvm:vm-{ctid}-disk-0,size=200G", "swap": 512,
                "unprivileged": 1, "reaping_init": bool(reaping_init)}
        conf.update(options)
        (d / "conf.json").write_text(json.dumps(conf, indent=1))
        if start and not self.container_running(ctid):
            r = self.pct("start", ctid)
            if r.returncode != 0:
                raise LabError(f"pct start {ctid} failed ({r.returncode}): {r.stderr.strip()}")
        return ctid

    def add_engine_container(self, engine: str, name: str, ctid: int, *, start: bool = True, **options: Any) -> int:
        """A ``docker`` / ``podman`` container called ``name``: the lab container ``ctid`` (a real
        namespace, as for pct) that the engine emulator (``bin/docker``, ``bin/podman``) answers for."""
        if engine not in ("docker", "podman"):
            raise LabError(f"unknown engine {engine!r}")
        return self.add_container(ctid, start=start, engine=engine, engine_name=name, hostname=name, **options)

    def set_docker_daemon(self, mode: str | None) -> None:
        """``"denied"``: the SSH user may not use the socket; ``"down"``: no daemon; None: fine."""
        p = self.state_dir / "docker_daemon"
        if mode is None:
            p.unlink(missing_ok=True)
        else:
            p.write_text(mode + "\n")

    def set_container_option(self, ctid: int, **options: Any) -> None:
        """Change conf.json keys of a container (None removes a key); applies from the next pct call."""
        p = self.container_dir(ctid) / "conf.json"
        conf = json.loads(p.read_text())
        for k, v in options.items():
            if v is None:
                conf.pop(k, None)
            else:
                conf[k] = v
        p.write_text(json.dumps(conf, indent=1))

    def remove_container(self, ctid: int) -> None:
        self._kill_container(ctid)
        shutil.rmtree(self.container_dir(ctid), ignore_errors=True)

    def container_init_pid(self, ctid: int) -> int | None:
        """Host pid of the container's PID 1, or None when it is stopped."""
        try:
            info = json.loads((self.container_dir(ctid) / "init.json").read_text())
        except (OSError, ValueError):
            return None
        st = proc_stat(info["pid"])
        if st is None or st[0] in ("Z", "X") or st[2] != info["start"]:
            return None
        return int(info["pid"])

    def container_running(self, ctid: int) -> bool:
        return self.container_init_pid(ctid) is not None

    def container_ids(self) -> list[int]:
        if not self.containers_dir.is_dir():
            return []
        return sorted(int(p.name) for p in self.containers_dir.iterdir()
                      if p.name.isdigit() and (p / "conf.json").exists())

    def _kill_container(self, ctid: int) -> None:
        d = self.container_dir(ctid)
        pid = self.container_init_pid(ctid)
        if pid is not None:
            _kill(pid, signal.SIGKILL)  # PID 1 dies: the kernel kills the whole namespace
            wait_for(lambda: not pid_alive(pid), 15, message=f"init {pid} of CT {ctid} did not die")
        # the unshare wrapper exits by itself once its child (our init) is gone
        for name in ("init.json", "ready"):
            try:
                (d / name).unlink()
            except FileNotFoundError:
                pass

    def kill_jobs(self, ctid: int = DEFAULT_CT) -> list[int]:
        """SIGKILL every process whose working directory is container ``ctid``'s workspace (a job
        an earlier test left running would otherwise be a stray of the next test's job); the host
        pids killed.  The container's init never works there, so it is never among them."""
        ws = str(self.workspace(ctid))
        killed: list[int] = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if cwd == ws or cwd.startswith(ws + "/"):
                _kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
        for pid in killed:
            wait_for(lambda pid=pid: not pid_alive(pid), 15, message=f"job {pid} left in CT {ctid} did not die")
        return killed

    def stop_containers(self) -> None:
        """Hard-stop every container of this lab (no pct texts, no lock: also for cleanup)."""
        for ctid in self.container_ids():
            self._kill_container(ctid)

    # --------------------------------------------------------------------------------- GPU
    def set_gpu_state(self, mode: str = "normal", *, gpus: list[dict[str, Any]] | None = None,
                      apps: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
        """Write the nvidia-smi emulator's state (see bin/nvidia-smi for the format).

        ``gpus=None`` keeps the emulator's default single H100; fields may be ``"[N/A]"``,
        ``"[Not Supported]"`` or ``"[Insufficient Permissions]"``.  ``extra``: ``driver_version``,
        ``cuda_version``, ``nvml_version``, ``unknown_fields`` (an older driver: querying one of
        them is refused with exit 2).
        """
        state: dict[str, Any] = {"mode": mode, "apps": apps or []}
        if gpus is not None:
            state["gpus"] = gpus
        state.update(extra)
        tmp = self.gpu_state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1))
        os.replace(tmp, self.gpu_state_file)
        return state

    @property
    def kmsg_file(self) -> Path:
        """The host kernel log the lab's ``dmesg`` shows (absent: the real dmesg runs)."""
        return self.state_dir / "kmsg.txt"

    def add_kernel_message(self, message: str, when: float | None = None) -> str:
        """Append one kernel message, timestamped like ``dmesg --time-format iso``; returns the line."""
        import datetime

        ts = datetime.datetime.fromtimestamp(time.time() if when is None else when, datetime.timezone.utc)
        line = ts.strftime("%Y-%m-%dT%H:%M:%S,%f+00:00") + " " + message
        with open(self.kmsg_file, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
        return line

    def reset_kernel_messages(self) -> None:
        try:
            self.kmsg_file.unlink()
        except FileNotFoundError:
            pass

    def reset_gpu_state(self) -> None:
        try:
            self.gpu_state_file.unlink()
        except FileNotFoundError:
            pass

    @staticmethod
    def gpu(index: int = 0, **fields: Any) -> dict[str, Any]:
        """A GPU entry for ``set_gpu_state(gpus=[...])`` with realistic H100 defaults."""
        g = {"index": index, "name": "NVIDIA H100 80GB HBM3",
             "uuid": f"GPU-5b2c8f9e-3a41-4c7d-9e0b-6f1d2a3b4c{index:02x}",
             "pci.bus_id": f"00000000:{index + 1:02X}:00.0", "utilization.gpu": 0, "memory.used": 1,
             "memory.total": 81559, "temperature.gpu": 34, "power.draw": 69.85, "power.limit": 700.0,
             "pstate": "P0", "fan.speed": "[N/A]", "persistence_mode": "Enabled",
             "ecc.errors.uncorrected.volatile.total": 0}
        g.update(fields)
        return g

    # ------------------------------------------------------------------------------ jobs
    def jobsim_argv(self, *args: object) -> list[str]:
        """``/usr/bin/python3 <lab>/libexec/jobsim.py ARGS`` (works under pct exec's minimal PATH)."""
        return [_python_for_scripts(), str(self.jobsim), *map(str, args)]

    def jobsim_command(self, *args: object) -> str:
        return shlex.join(self.jobsim_argv(*args))

    # ---------------------------------------------------------------------------- config
    def config_dict(self, **overrides: Any) -> dict[str, dict[str, Any]]:
        """The cockpit config for this lab as a dict; see ``config_toml``."""
        ctid = DEFAULT_CT
        target = dict(overrides.get("target") or {})
        behind = target.pop("ctid", None)  # a docker/podman container: the lab container behind its name
        if "target" in overrides and overrides["target"] is not None:
            overrides = {**overrides, "target": target}
        if behind is not None:
            ctid = int(behind)
        elif "container" in target and isinstance(target["container"], int):
            ctid = int(target["container"])
        ws = str(self.workspace(ctid))
        doc: dict[str, dict[str, Any]] = {
            "target": {"name": "lab", "host": self.host, "user": self.user, "port": self.port,
                       "runtime": "pct", "container": ctid},
            # config_file: the lab's own ssh_config, never the developer's ~/.ssh/config
            "ssh": {"known_hosts": str(self.known_hosts), "identity_file": str(self.identity_file),
                    "config_file": str(self.ssh_config), "keepalive_interval": 5, "connect_timeout": 5},
            "job": {"workdir": ws,
                    "command": self.jobsim_command("--steps", 0, "--interval", 0.2),
                    "log": f"{ws}/train-{{attempt}}.log",
                    "startup_timeout": 20, "progress_pattern": r"^step \d+", "healthy_after": 5},
            "deploy": {"source": str(self.dir / "src"), "dest": f"{ws}/src",
                       "exclude": ["__pycache__", "*.pyc"]},
            "cache": {"paths": ["/tmp/torchinductor_root"]},
            "gpu": {"nvidia_smi": str(self.nvidia_smi), "where": "container"},
            "ui": {"refresh_interval": 1.0},
            # a settle window of 1 s keeps the suite fast; real jobs get the default 10 s
            "verify": {"settle": 1.0, "fate_interval": 0.5},
        }
        (self.dir / "src").mkdir(exist_ok=True)
        for section, value in overrides.items():
            if value is None:
                doc.pop(section, None)
            elif isinstance(value, Mapping):
                merged = dict(doc.get(section, {}))
                for k, v in value.items():
                    if v is None:
                        merged.pop(k, None)
                    else:
                        merged[k] = v
                doc[section] = merged
            else:
                raise TypeError(f"override for [{section}] must be a dict of keys (or None to drop it)")
        return doc

    def config_toml(self, **overrides: Any) -> str:
        """Text of a cockpit config for this lab.

        ``overrides`` are per section: ``lab.config_toml(job={"command": "..."}, ui=None)``; a key
        set to None is dropped, a section set to None is dropped.
        """
        return to_toml(self.config_dict(**overrides))

    def write_config(self, path: str | os.PathLike[str], **overrides: Any) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(self.config_toml(**overrides))
        return p

    # ----------------------------------------------------------------------------- reset
    def reset(self, ctid: int = DEFAULT_CT) -> None:
        """Back to the default state: sshd up with the trusted host key, GPU state default,
        container ``ctid`` running (and only the containers that were running stay so)."""
        if self.max_sessions != DEFAULT_MAX_SESSIONS:
            self.set_max_sessions(DEFAULT_MAX_SESSIONS)
        if not self.sshd_running:
            self.start()
        self.write_known_hosts()
        self.reset_gpu_state()
        self.reset_kernel_messages()
        if ctid in self.container_ids():
            self.kill_jobs(ctid)
            self.set_container_option(ctid, start_error=None, stop_error=None)
            if not self.container_running(ctid):
                self.pct("start", ctid, check=True)

    def __repr__(self) -> str:
        return f"<Lab {self.user}@{self.host}:{self.port} dir={self.dir}>"


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_atexit_installed = False


def _install_atexit() -> None:
    global _atexit_installed
    if not _atexit_installed:
        atexit.register(_close_all)
        _atexit_installed = True


def _close_all() -> None:
    with _live_lock:
        labs = list(_live_labs)
    for lab in labs:
        try:
            lab.close()
        except Exception as e:  # noqa: BLE001 - best effort at interpreter exit, but say so
            print(f"tests.lab: cleanup of {lab!r} failed: {e}", file=sys.stderr)
