"""A real single-node Slurm cluster on 127.0.0.1 for the lab (Debian's ``slurm-wlm`` and ``munge``).

:class:`SlurmLab` builds, under a directory of its own::

    munge/      munge.key (0400), munged's socket, pid, log and seed
    slurm.conf  ClusterName cockpitlab, SlurmctldHost=localhost(127.0.0.1), one node ``lab1`` at
                127.0.0.1 with CPUs=1 (so one job holds the whole node: the "queued" case), a
                partition ``debug``, ProctrackType=proctrack/linuxproc, TaskPlugin=task/none,
                SelectType=select/cons_tres, ReturnToService=2, no accounting (like many small
                clusters, and unlike a site with slurmdbd: ``sacct`` has nothing to say here)
    state/ spool/  slurmctld's state and slurmd's spool
    bin/        ``sbatch squeue scontrol scancel sinfo sacct srun`` wrappers that export this
                cluster's ``SLURM_CONF``: put on the PATH of the lab's sshd, so every command a
                cockpit SSH session runs on the "login node" reaches this cluster
    work/       a shared working directory for the jobs

``SlurmLab(nodes=2)`` adds ``lab2`` (…): one ``slurmd -N labK`` per node on 127.0.0.1, each on its own
port with its own spool (``%n``), so a job can span nodes and one node's slurmd can be killed alone
(:meth:`SlurmLab.kill_slurmd`; ``reset()`` restarts it).

It starts ``munged``, ``slurmctld -D`` and ``slurmd -D -N lab1`` as root (logs to files), then
waits with a deadline until ``sinfo`` shows the node idle.  ``close()`` stops all three and
removes the directory.  :func:`slurm_unavailable_reason` says why it cannot run here (packages
missing and not installable, not root).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from .util import WaitTimeout, free_port, wait_for

__all__ = ["SlurmLab", "slurm_unavailable_reason", "ensure_slurm_packages", "NODE", "PARTITION"]

NODE = "lab1"
PARTITION = "debug"
DAEMONS = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd"}
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel", "sinfo", "sacct", "srun", "sstat")
PACKAGES = ("slurm-wlm", "munge")


def _missing() -> list[str]:
    tools = list(DAEMONS.values()) + [f"/usr/bin/{c}" for c in ("sbatch", "squeue", "scontrol", "scancel", "sinfo")]
    return [t for t in tools if not os.access(t, os.X_OK)]


def ensure_slurm_packages(timeout: float = 600) -> str | None:
    """Install ``slurm-wlm`` and ``munge`` with apt when missing; None when they are there, else why not."""
    if not _missing():
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return f"missing {', '.join(_missing())} and cannot apt-get install {' '.join(PACKAGES)} here (needs root and apt)"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES]):
            r = subprocess.run(argv, capture_output=True, timeout=timeout, env=env)
            if r.returncode != 0:
                return f"`{shlex.join(argv)}` failed: {r.stderr.decode(errors='replace').strip()[-400:]}"
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"apt-get could not install {' '.join(PACKAGES)}: {e}"
    return f"still missing after apt-get install: {', '.join(_missing())}" if _missing() else None


def slurm_unavailable_reason(install: bool = True) -> str | None:
    """Why the Slurm lab cannot run here, or None when it can (installs the packages when ``install``)."""
    if os.geteuid() != 0:
        return "the Slurm lab needs root (slurmd and munged run as root)"
    if install:
        return ensure_slurm_packages()
    return f"missing {', '.join(_missing())} (apt-get install {' '.join(PACKAGES)})" if _missing() else None


class SlurmLab:
    """One slurmctld, one slurmd (node ``lab1``, 127.0.0.1) and their munged; see the module doc."""

    def __init__(self, dir: str | os.PathLike[str] | None = None, *, cpus: int = 1, memory_mb: int = 1000, nodes: int = 1) -> None:
        self.dir = Path(dir) if dir is not None else Path(tempfile.mkdtemp(prefix="cockpit-slurm-", dir="/var/tmp"))
        self.cpus, self.memory_mb = cpus, memory_mb
        #: ``lab1``, ``lab2``…: more than one is one slurmd per node on 127.0.0.1, each on its own port
        self.nodes = [NODE] + [f"lab{i}" for i in range(2, nodes + 1)]
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ctld_port = self.slurmd_port = 0

    # -- paths ---------------------------------------------------------------------------------
    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    @property
    def bin_dir(self) -> Path:
        return self.dir / "bin"

    @property
    def work(self) -> Path:
        return self.dir / "work"

    @property
    def munge_socket(self) -> Path:
        return self.dir / "munge" / "munge.socket.2"

    def env(self) -> dict[str, str]:
        return dict(os.environ, SLURM_CONF=str(self.conf))

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 60) -> SlurmLab:
        for d in ("munge", "state", "spool", "log", "bin", "work"):
            (self.dir / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o755)
        os.chmod(self.dir / "munge", 0o700)
        key = self.dir / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.ctld_port, self.slurmd_port = free_port(), free_port()
        self.node_ports = {n: self.slurmd_port if n == NODE else free_port() for n in self.nodes}
        self._write_conf()
        self._write_wrappers()
        m = self.dir / "munge"
        self._spawn("munged", ["/usr/sbin/munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={key}", f"--pid-file={m / 'munged.pid'}", f"--log-file={m / 'munged.log'}",
                               f"--seed-file={m / 'munged.seed'}"])
        wait_for(self.munge_socket.exists, 10, lambda: self._why("munged"))
        self._spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(self.conf)])
        for n in self.nodes:
            self.start_slurmd(n)
        try:
            wait_for(lambda: all(self.node_state(n).startswith("idle") for n in self.nodes), timeout, lambda: self._why("slurmd"),
                     max_interval=0.5)
        except WaitTimeout:
            self.close()
            raise
        return self

    def slurmd_name(self, node: str) -> str:
        return "slurmd" if node == NODE else f"slurmd-{node}"

    def start_slurmd(self, node: str) -> None:
        self._spawn(self.slurmd_name(node), ["/usr/sbin/slurmd", "-D", "-N", node, "-f", str(self.conf)])

    def kill_slurmd(self, node: str) -> None:
        """SIGKILL one node's slurmd (its node stops answering: srun to it fails, then slurmctld marks it DOWN)."""
        p = self.procs.pop(self.slurmd_name(node))
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / "log" / f"{name}.out", "ab")  # noqa: SIM115  (kept by the child)
        try:
            self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                env=self.env(), start_new_session=True)
        finally:
            log.close()

    def _why(self, name: str) -> str:
        """What went wrong so far: each daemon's exit status and the last lines of the logs."""
        parts = []
        for n, p in self.procs.items():
            if p.poll() is not None:
                parts.append(f"{n} exited with {p.returncode}")
        for f in sorted((self.dir / "log").glob("*")):
            text = f.read_text(errors="replace").strip().splitlines()[-8:]
            parts.append(f"--- {f.name}\n" + "\n".join(text))
        return "\n".join(parts) + f"\nsinfo: {self.node_state()!r}"

    def close(self) -> None:
        for name in [self.slurmd_name(n) for n in self.nodes] + ["slurmctld", "munged"]:
            p = self.procs.pop(name, None)
            if p is None or p.poll() is not None:
                continue
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- the cluster as a user sees it --------------------------------------------------------------
    def run(self, *argv: str, check: bool = True, timeout: float = 20) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(list(argv), capture_output=True, text=True, env=self.env(), timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"{shlex.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def node_state(self, node: str = NODE) -> str:
        """``sinfo``'s state of the node (``idle``, ``alloc``, ``drain``, ``down*``…), or "" when it cannot be read."""
        try:
            r = self.run("/usr/bin/sinfo", "-h", "-N", "-n", node, "-o", "%T", check=False, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return r.stdout.strip() if r.returncode == 0 else ""

    def job_field(self, job_id: str, key: str) -> str:
        """One ``Key=value`` of ``scontrol show job -o`` ("" when the job is unknown)."""
        r = self.run("/usr/bin/scontrol", "show", "job", "-o", job_id, check=False)
        for word in r.stdout.split():
            k, _, v = word.partition("=")
            if k == key:
                return v
        return ""

    def sbatch(self, *args: str) -> str:
        """Submit a batch job (``--wrap`` or a script); returns its id."""
        r = self.run("/usr/bin/sbatch", "--parsable", f"--chdir={self.work}", *args)
        return r.stdout.strip().split(";")[0]

    def drain(self, reason: str = "test") -> None:
        self.run("/usr/bin/scontrol", "update", f"NodeName={NODE}", "State=DRAIN", f"Reason={reason}")
        wait_for(lambda: "drain" in self.node_state(), 10, lambda: self.node_state())

    def resume(self) -> None:
        for n in self.nodes:
            if self.slurmd_name(n) not in self.procs:  # killed by a test: back, then resumed below
                self.start_slurmd(n)
            st = self.node_state(n)
            if "drain" in st or "down" in st:
                self.run("/usr/bin/scontrol", "update", f"NodeName={n}", "State=RESUME", check=False)

    def reset(self, timeout: float = 20) -> None:
        """Every job cancelled, the node resumed and idle: the state each test starts from."""
        self.run("/usr/bin/scancel", "--full", "--partition", PARTITION, check=False)
        self.resume()
        wait_for(lambda: all(self.node_state(n) == "idle" for n in self.nodes) and not self.run("/usr/bin/squeue", "-h", check=False).stdout.strip(),
                 timeout, lambda: f"node {self.node_state()!r}; queue {self.run('/usr/bin/squeue', '-h', check=False).stdout!r}",
                 max_interval=0.3)

    # -- files -------------------------------------------------------------------------------------
    def _write_conf(self) -> None:
        d = self.dir
        self.conf.write_text("\n".join([
            "# generated by tests/lab/slurm.py",
            "ClusterName=cockpitlab",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={d / 'state'}",
            f"SlurmdSpoolDir={d / 'spool'}" + ("/%n" if len(self.nodes) > 1 else ""),
            f"SlurmctldPidFile={d / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'slurmd-%n.pid'}" if len(self.nodes) > 1 else f"SlurmdPidFile={d / 'slurmd.pid'}",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log' / 'slurmd-%n.log'}" if len(self.nodes) > 1 else f"SlurmdLogFile={d / 'log' / 'slurmd.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/builtin",
            "SchedulerParameters=batch_sched_delay=0",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmdTimeout=10",
            "SlurmctldTimeout=10",
            "InactiveLimit=0",
            "OverTimeLimit=0",
            "KillWait=2",
            "MinJobAge=600",
            "MessageTimeout=5",
            *(f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={n}" + (f" Port={self.node_ports[n]}" if len(self.nodes) > 1 else "")
              + f" CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN" for n in self.nodes),
            f"PartitionName={PARTITION} Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]))

    def _write_wrappers(self) -> None:
        """``bin/sbatch`` … : the real client with this cluster's SLURM_CONF (for the lab's sshd PATH)."""
        for c in CLIENTS:
            w = self.bin_dir / c
            w.write_text(f"#!/bin/sh\nSLURM_CONF={shlex.quote(str(self.conf))}; export SLURM_CONF\nexec /usr/bin/{c} \"$@\"\n")
            w.chmod(0o755)

    def install_wrappers(self, bin_dir: Path) -> list[Path]:
        """Copy the client wrappers into ``bin_dir`` (the lab sshd's PATH); returns them (to remove later)."""
        out = []
        for c in CLIENTS:
            dst = bin_dir / c
            shutil.copy2(self.bin_dir / c, dst)
            out.append(dst)
        return out

    def wait_state(self, job_id: str, *states: str, timeout: float = 20) -> str:
        """Wait until the job's ``JobState`` is one of ``states``; returns it."""
        got = wait_for(lambda: (s := self.job_field(job_id, "JobState")) in states and s, timeout,
                       lambda: f"job {job_id}: {self.run('/usr/bin/scontrol', 'show', 'job', '-o', job_id, check=False).stdout.strip()}",
                       max_interval=0.3)
        return str(got)




# -- the pytest fixture --------------------------------------------------------------------------------
def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _fixture() -> object:
    import pytest

    @pytest.fixture(scope="session")
    def slurm_lab(lab: object):  # type: ignore[no-untyped-def]
        """A running single-node Slurm cluster reached through the lab's sshd (its clients on the sshd's PATH).

        Skips with the reason when slurm-wlm/munge cannot be installed here; under CI that is a failure."""
        reason = slurm_unavailable_reason()
        if reason:
            if _in_ci():
                pytest.fail(f"the Slurm lab is required in CI: {reason}", pytrace=False)
            pytest.skip(f"Slurm lab unavailable: {reason}")
        s = SlurmLab().start()
        wrappers = s.install_wrappers(lab.bin_dir)  # type: ignore[attr-defined]
        try:
            yield s
        finally:
            for w in wrappers:
                w.unlink(missing_ok=True)
            s.close()

    return slurm_lab


slurm_lab = _fixture()
