"""What discovery found, typed: the host, its targets (containers, the host itself) and their jobs."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from ..procstat import output_kind

__all__ = ["JobCandidate", "Zombie", "TargetCandidate", "SlurmJob", "HostReport", "output_kind"]


@dataclass
class JobCandidate:
    """A Python process that looks like training (libtorch mapped, or its argv says so)."""

    pid: int
    ppid: int
    argv: list[str]
    cwd: str | None = None
    user: str | None = None
    start: int | None = None  # epoch seconds (stat field 22 + btime)
    state: str = ""
    torch: bool | None = None  # None: /proc/PID/maps could not be read
    argv_match: bool = False
    env: dict[str, str] | None = None  # None: /proc/PID/environ could not be read
    stdout: str | None = None
    stderr: str | None = None
    fd_logs: list[str] = field(default_factory=list)
    cwd_log: str | None = None
    workers: list[int] = field(default_factory=list)  # child processes that are jobs too (ranks)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    @property
    def output(self) -> str:
        """Where stdout goes: ``file``, ``pipe``, ``tty``, ``socket``, ``null``, ``unknown``."""
        return output_kind(self.stdout or "")

    @property
    def log_path(self) -> str | None:
        """The file its output goes to: stdout's (else stderr's) file, else the newest open
        ``*.log``, else the newest ``*.log`` in its cwd."""
        for link in (self.stdout, self.stderr):
            if link and output_kind(link) == "file":
                return link
        if self.fd_logs:
            return self.fd_logs[0]
        return self.cwd_log

    @property
    def log_source(self) -> str:
        """Where :attr:`log_path` was read from (for the config's comment)."""
        if self.stdout and output_kind(self.stdout) == "file":
            return f"/proc/{self.pid}/fd/1"
        if self.stderr and output_kind(self.stderr) == "file":
            return f"/proc/{self.pid}/fd/2"
        if self.fd_logs:
            return f"an open *.log among /proc/{self.pid}/fd"
        if self.cwd_log:
            return f"the newest *.log in its cwd ({self.cwd})"
        return ""

    def evidence(self) -> list[str]:
        out = []
        if self.torch:
            out.append("libtorch mapped (/proc/PID/maps)")
        elif self.torch is None:
            out.append("/proc/PID/maps unreadable")
        if self.argv_match:
            out.append("argv names training")
        out.append(f"output: {self.output}" + (f" {self.log_path}" if self.log_path else ""))
        if self.workers:
            out.append(f"{len(self.workers)} worker process(es)")
        return out


@dataclass
class Zombie:
    pid: int
    ppid: int
    comm: str


@dataclass
class TargetCandidate:
    """A place a job can run: ``runtime`` ``none`` (the host), ``pct``, ``docker`` or ``podman``."""

    runtime: str
    container: str | None = None  # CTID or engine name; None for the host
    name: str = ""
    status: str = "running"
    image: str = ""
    gpu_lines: list[str] = field(default_factory=list)
    jobs: list[JobCandidate] = field(default_factory=list)
    zombies: list[Zombie] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    scanned: bool = False

    @property
    def running(self) -> bool:
        return self.status.lower().startswith(("running", "up"))

    @property
    def label(self) -> str:
        if self.runtime == "none":
            return "the host"
        return f"{self.runtime} {self.container}" + (f" ({self.name})" if self.name and self.name != self.container else "")


@dataclass
class SlurmJob:
    id: str
    name: str
    state: str
    elapsed: str = ""
    nodes: str = ""


@dataclass
class HostReport:
    host: str
    user: str | None = None
    port: int | None = None
    tools: list[str] = field(default_factory=list)
    targets: list[TargetCandidate] = field(default_factory=list)
    slurm_jobs: list[SlurmJob] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "layer: message"
    malformed: list[str] = field(default_factory=list)  # lines the parser could not read
    duration_ms: float = 0.0

    def target(self, runtime: str, container: str | None) -> TargetCandidate | None:
        return next((t for t in self.targets if t.runtime == runtime and t.container == container), None)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for td, t in zip(d["targets"], self.targets, strict=True):
            td["running"] = t.running
            for jd, j in zip(td["jobs"], t.jobs, strict=True):
                jd.update(command=j.command, output=j.output, log_path=j.log_path, evidence=j.evidence())
        return d
