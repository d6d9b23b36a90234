"""Findings about a process table: :func:`analyse`, and :func:`ps_probe_findings` about the probe.

:func:`analyse` turns a process list into :class:`~cockpit.core.layers.Finding` objects:

``zombie``, ``zombie-threads`` (layer ``container``)
    see :mod:`.zombies`.
``uninterruptible`` (layer ``gpu`` when the kernel wait channel names the NVIDIA driver, else
    ``process``, as the layer table (cockpit.core.layers) puts "stuck in D" under the job's lifecycle)
    a ``D`` entry.  A brief ``D`` is ordinary I/O; one that persists across polls is not.
``job-missing``, ``duplicate-job`` (layer ``process``)
    none of the job's recorded pids is in the table; another copy of the job's command runs outside
    the job's process group.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable

from ...layers import Finding, Layer, Severity
from ..text import fmt_age, to_text
from .command import HEADER
from .tree import Proc, ProcTree
from .zombies import ZombieWatch, engine_advice, pid1_reaps, zombie_findings

__all__ = ["analyse", "job_members", "ps_probe_findings"]


def ps_probe_findings(text: str | bytes | None) -> list[Finding]:
    """Findings about the probe itself: ``ps`` hung (killed at its deadline)."""
    head = to_text(text).lstrip()[:60]
    if not head.startswith(f"{HEADER} timeout"):
        return []
    secs = head.split()[2] if len(head.split()) > 2 else "?"
    return [
        Finding(
            layer=Layer.CONTAINER,
            kind="ps-hung",
            summary=f"ps did not finish within {secs}s: reading some process's /proc entry blocks",
            advice=(
                "A process is stuck in the kernel holding its memory map (often in the GPU driver; check the "
                "host's kernel messages for an Xid or hung task). Nothing inside can end it: reboot the container."
            ),
            severity=Severity.ERROR,
            subject={"timeout_s": secs},
        )
    ]


def job_members(tree: ProcTree, job_pids: Iterable[int] = (), job_pgid: int | None = None) -> set[int]:
    """The job's processes: its recorded pids, its process group, and their descendants."""
    roots = {p for p in job_pids if p in tree}
    if job_pgid is not None:
        roots |= {p.pid for p in tree.by_pid.values() if job_pgid in (p.pgid, p.sid)}  # the job's group and session
    out = set(roots)
    for pid in roots:
        out |= {d.pid for d in tree.descendants(pid)}
    return out


def analyse(
    procs: Iterable[Proc],
    *,
    job_pids: Iterable[int] = (),
    job_pgid: int | None = None,
    job_command: str | None = None,
    own_pids: Iterable[int] = (),
    engine: str | None = None,
    zombie_watch: ZombieWatch | None = None,
    now: float | None = None,
    job_ended: bool = False,
) -> list[Finding]:
    """Findings about a process table: zombies, ``D`` states, the job's own processes.

    ``job_pids``/``job_pgid`` are pids as seen inside the container (what the launch recorded);
    ``job_command`` is the job's command line, used to spot other copies of the job.
    ``own_pids`` are cockpit's own processes (:func:`~.own.own_processes`): never counted.
    ``engine`` (``"docker"``/``"podman"``) fits the zombie advice to such a container.
    ``zombie_watch`` (kept by the caller across polls) holds back a young zombie of PID 1 (or of an
    exiting parent) until it outlives the watch's grace; ``now`` is its monotonic clock.
    ``job_ended``: the job's end is known (its fate is final): its pids gone from the table is
    that end, not a finding.
    """
    own = set(own_pids)
    tree = ProcTree([p for p in procs if p.pid not in own])
    pids = [int(p) for p in job_pids]
    members = job_members(tree, pids, job_pgid)
    young = zombie_watch.young(tree, time.monotonic() if now is None else now) if zombie_watch is not None else set()
    findings = zombie_findings(tree, members, pid1_reaps(tree.pid1), young)
    if engine:
        for f in findings:
            f.advice = engine_advice(f.advice, engine)
    findings += _uninterruptible_findings(tree, members)
    if pids and not job_ended and not any(pid in tree for pid in pids) and not (job_pgid is not None and members):
        findings.append(_job_missing(pids, job_pgid))
    if job_command and job_command.strip():
        findings += _duplicate_job_findings(tree, members, job_command, job_pgid)
    return findings


_GPU_WCHAN = re.compile(r"(?:^|_)(?:nv|uvm|nvidia|os_|_nv)|nvidia|^nv|^uvm", re.IGNORECASE)


def _uninterruptible_findings(tree: ProcTree, members: set[int]) -> list[Finding]:
    findings: list[Finding] = []
    for p in sorted(tree.by_pid.values(), key=lambda p: p.pid):
        if not p.is_uninterruptible:
            continue
        in_gpu = bool(p.wchan and p.wchan not in ("-", "0") and _GPU_WCHAN.search(p.wchan))
        where = f"in the kernel function {p.wchan}" if p.wchan and p.wchan not in ("-", "0") else "in the kernel"
        findings.append(
            Finding(
                layer=Layer.GPU if in_gpu else Layer.PROCESS,
                kind="uninterruptible",
                summary=f"pid {p.pid} ({p.name}) is in uninterruptible sleep (D) {where}"
                + (" — the job" if p.pid in members else ""),
                advice=(
                    "A brief D is ordinary I/O; one that lasts cannot be killed (even SIGKILL waits): "
                    + (
                        "it waits in the NVIDIA driver: check the host's kernel messages for an Xid; a GPU "
                        "reset or host reboot may be needed."
                        if in_gpu
                        else "check storage (NFS, full or slow disk) and the host's kernel messages; a "
                        "container reboot clears it."
                    )
                ),
                severity=Severity.ERROR if p.pid in members else Severity.WARNING,
                subject={
                    "pid": p.pid,
                    "ppid": p.ppid,
                    "comm": p.comm,
                    "args": p.args,
                    "state": p.state,
                    "wchan": p.wchan,
                    "elapsed_s": p.elapsed_s,
                    "job": p.pid in members,
                },
            )
        )
    return findings


def _job_missing(job_pids: list[int], job_pgid: int | None) -> Finding:
    return Finding(
        layer=Layer.PROCESS,
        kind="job-missing",
        summary=f"job pid {', '.join(map(str, job_pids))} is not in the process table",
        advice="The job exited or never started: read its log tail and the host's kernel messages "
        "(an OOM kill leaves no trace in the log).",
        severity=Severity.ERROR,
        subject={"job_pids": job_pids, "job_pgid": job_pgid},
    )


def _argv_equal(args: str, command: str) -> bool:
    a, b = args.split(), command.split()
    if not a or not b or len(a) != len(b):
        return False
    if a == b:
        return True
    return a[1:] == b[1:] and os.path.basename(a[0]) == os.path.basename(b[0])


def _duplicate_job_findings(
    tree: ProcTree, members: set[int], job_command: str, job_pgid: int | None
) -> list[Finding]:
    ancestors: set[int] = set()
    for m in members:
        ancestors |= {a.pid for a in tree.ancestors(m)}
    copies = [
        p
        for p in sorted(tree.by_pid.values(), key=lambda p: p.pid)
        if not p.is_zombie
        and p.pid not in members
        and p.pid not in ancestors
        and _argv_equal(p.args, job_command)
    ]
    if members:
        strays = copies
    else:
        strays = copies if len(copies) > 1 else []
    return [
        Finding(
            layer=Layer.PROCESS,
            kind="duplicate-job",
            summary=f"another copy of the job runs: pid {p.pid} (pgid {p.pgid}, {fmt_age(p.elapsed_s)} old)"
            if members
            else f"{len(copies)} processes run the job's command: pid {p.pid} is one",
            advice="Two copies share the GPU and write the same files: stop the stray copy by pid "
            "(and start time), and check what launched it.",
            severity=Severity.WARNING,
            subject={
                "pid": p.pid,
                "ppid": p.ppid,
                "pgid": p.pgid,
                "args": p.args,
                "elapsed_s": p.elapsed_s,
                "job_pgid": job_pgid,
            },
        )
        for p in strays
    ]
