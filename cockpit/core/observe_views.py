"""What each refresh of the :class:`~.observe.Observer` holds: one view per part (processes,
GPUs, the live log, host kernel messages), each with the time it was collected and the error that
stopped it, so a reader can always tell stale data from fresh (a failed refresh keeps the last good
data *and* says it is stale)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .layers import Finding, Layer
from .probes import gpu as gpu_probe
from .probes import procs as procs_probe
from .probes.logs import LogFollowerState

__all__ = ["Part", "ProcsView", "GPUView", "LogView", "KmsgView"]


@dataclass
class Part:
    """Freshness bookkeeping shared by every observed part."""

    collected_at: float | None = None
    error: str | None = None
    error_layer: Layer | None = None
    duration_s: float = 0.0

    def age(self, now: float | None = None) -> float | None:
        return None if self.collected_at is None else (now or time.time()) - self.collected_at

    def meta(self) -> dict[str, Any]:
        return {
            "collected_at": round(self.collected_at, 3) if self.collected_at else None,
            "error": self.error,
            "error_layer": self.error_layer.value if self.error_layer else None,
            "duration_s": round(self.duration_s, 4),
        }


@dataclass
class ProcsView(Part):
    procs: list[procs_probe.Proc] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)
    job_pids: set[int] = field(default_factory=set)
    #: cockpit's own processes (the session shell and its probes): hidden by default, never counted
    own_pids: set[int] = field(default_factory=set)
    #: pid → GPU memory it holds (MiB; an NA when only the fd scan saw it), from the last GPU refresh
    gpu_mib: dict[int, Any] = field(default_factory=dict)
    #: a Slurm job's nodes, asked one by one (empty elsewhere); ``note``: why there is nothing to show
    nodes: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def tree(self) -> procs_probe.ProcTree:
        return procs_probe.ProcTree(self.procs)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.meta(),
            "count": len(self.procs),
            "processes": [p.to_dict() for p in self.procs],
            "job_pids": sorted(self.job_pids),
            "own_pids": sorted(self.own_pids),
            "gpu_memory_mib": {str(k): gpu_probe.jsonable(v) for k, v in sorted(self.gpu_mib.items())},
            "findings": [f.to_dict() for f in self.findings],
            "bad_lines": self.bad_lines[:20],
            **({"nodes": self.nodes} if self.nodes else {}),
            **({"note": self.note} if self.note else {}),
        }


@dataclass
class GPUView(Part):
    snapshot: gpu_probe.GPUSnapshot | None = None
    #: "stream" (the values from one long-lived `nvidia-smi -lms`, the processes from the last full
    #: probe) or "poll" (the full probe ran for this refresh)
    mode: str = "poll"

    def to_dict(self) -> dict[str, Any]:
        snap = self.snapshot.to_dict() if self.snapshot else {"gpus": [], "processes": [], "findings": []}
        return {**self.meta(), **snap, "mode": self.mode}


@dataclass
class LogView(Part):
    path: str | None = None
    follower: LogFollowerState | None = None

    def to_dict(self, last_lines: int = 20) -> dict[str, Any]:
        f = self.follower
        now = time.time()
        d: dict[str, Any] = {**self.meta(), "path": self.path}
        if f is None:
            return d
        first, final = f.classifier.first_error, f.classifier.final_error
        d.update(
            {
                "exists": f.exists,
                "size": f.size,
                "offset": f.offset,
                "missing_for_s": _round(f.missing_for_s(now)),
                "idle_for_s": _round(f.idle_for_s(now)),
                "lines_kept": len(f.ring),
                "last_lines": f.ring.tail(last_lines),
                "events": [e.to_dict() for e in list(f.events)[-10:]],
                "first_error": first.to_dict() if first else None,
                "final_error": final.to_dict() if final else None,
            }
        )
        return d


@dataclass
class KmsgView(Part):
    findings: list[Finding] = field(default_factory=list)
    #: "follow" (one long-lived `dmesg --follow` on the host) or "poll" (dmesg run per refresh)
    mode: str = "poll"
    #: why following is not in use now (the stream died, or never worked), and its layer
    follow_error: str | None = None
    follow_error_layer: Layer | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**self.meta(), "findings": [f.to_dict() for f in self.findings], "mode": self.mode,
                "follow_error": self.follow_error,
                "follow_error_layer": self.follow_error_layer.value if self.follow_error_layer else None}


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 1)
