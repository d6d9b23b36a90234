"""Which (target, job) pair a config should be written for, best first.

A running target with a torch job writing to a file beats one writing to a pipe or a tty, which
beats an argv-only match, which beats a running target with no job; a container beats the host
when both have the same evidence (the host also sees a container's processes through other PID
namespaces, but the scan counts those apart), stopped targets come last.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import HostReport, JobCandidate, TargetCandidate

__all__ = ["Candidate", "rank", "score"]


@dataclass
class Candidate:
    target: TargetCandidate
    job: JobCandidate | None
    score: int

    def describe(self) -> str:
        t = self.target
        head = t.label + ("" if t.running else f" [{t.status}]")
        if t.gpu_lines:
            head += f" [GPU: {len(t.gpu_lines)} config line(s)]"
        if self.job is None:
            why = "no training job found" if t.scanned else "not scanned (not running)"
            return f"{head}: {why}"
        j = self.job
        return f"{head}: pid {j.pid} {j.command[:100]} ({'; '.join(j.evidence())})"


def score(target: TargetCandidate, job: JobCandidate | None) -> int:
    s = 0
    if target.running:
        s += 1000
    if job is not None:
        s += 400
        if job.torch:
            s += 200
        if job.argv_match:
            s += 50
        if job.log_path and job.output == "file":
            s += 100
        elif job.log_path:
            s += 60
    if target.gpu_lines:
        s += 20
    if target.runtime != "none":
        s += 5
    return s


def rank(report: HostReport) -> list[Candidate]:
    out: list[Candidate] = []
    for t in report.targets:
        if t.jobs:
            out.extend(Candidate(t, j, score(t, j)) for j in t.jobs)
        else:
            out.append(Candidate(t, None, score(t, None)))
    # stable: among equals, the order found (host first, containers by id, engines by ps)
    return sorted(out, key=lambda c: -c.score)
