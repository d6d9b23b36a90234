"""The discovery script's output (:mod:`.script`) → a :class:`~.model.HostReport`.

Every line is either understood or kept in ``report.malformed`` (never an exception): a
truncated record, a field that is not a number, a section nobody knows.  Text a command printed
instead of its records (``pct exec`` refusing a stopped container, ``docker`` without its daemon)
becomes a problem of that target or that tool.
"""

from __future__ import annotations

import re

from .model import HostReport, JobCandidate, SlurmJob, TargetCandidate, Zombie
from .script import JOB_FIELDS

__all__ = ["parse_report", "gpu_lines"]

#: container config lines that pass a GPU through (Proxmox: cgroup rule for major 195, devN, binds)
_GPU_LINE = re.compile(r"^(lxc\.cgroup2?\.devices\.allow:\s*c\s+195:|dev\d+:\s*/dev/nvidia|lxc\.mount\.entry:\s*/dev/nvidia|"
                       r"lxc\.mount\.entry:\s*\S*/nvidia)")
_US = "\x1f"


def gpu_lines(conf: str) -> list[str]:
    """The lines of a container config that give it a GPU."""
    return [ln.strip() for ln in conf.splitlines() if _GPU_LINE.match(ln.strip())]


def _int(v: str) -> int | None:
    return int(v) if v.isdigit() else None


def _job(fields: list[str]) -> JobCandidate | None:
    if len(fields) != len(JOB_FIELDS):
        return None
    f = dict(zip(JOB_FIELDS, fields, strict=True))
    pid, ppid = _int(f["pid"]), _int(f["ppid"])
    if pid is None or ppid is None:
        return None
    argv = [a.replace("\x1e", "\n") for a in f["argv"].split(_US)]
    while argv and argv[-1] == "":
        argv.pop()
    env: dict[str, str] | None = None
    if f["env"] != "?":
        env = {}
        for kv in f["env"].split(_US):
            k, eq, v = kv.partition("=")
            if eq:
                env[k] = v

    def link(v: str) -> str | None:
        return None if v in ("", "?") else v

    return JobCandidate(
        pid=pid, ppid=ppid, argv=argv, cwd=link(f["cwd"]), user=link(f["user"]), start=_int(f["start"]), state=f["state"],
        torch=True if f["torch"] == "1" else False if f["torch"] == "0" else None, argv_match=f["argv_match"] == "1",
        env=env, stdout=link(f["fd1"]), stderr=link(f["fd2"]),
        fd_logs=[x for x in f["fd_logs"].split(_US) if x], cwd_log=link(f["cwd_log"]))


def _scan_line(t: TargetCandidate, line: str, report: HostReport) -> None:
    kind, _, rest = line.partition("\t")
    parts = rest.split("\t")
    if kind == "J":
        job = _job(parts)
        if job is None:
            report.malformed.append(line)
        else:
            t.jobs.append(job)
    elif kind == "Z" and len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
        t.zombies.append(Zombie(int(parts[0]), int(parts[1]), parts[2]))
    elif kind == "K" and len(parts) == 2:
        t.facts[parts[0]] = parts[1]
    elif kind == "E" and len(parts) == 2:
        t.problems.append(f"{parts[0]}: {parts[1]}")
    elif line.strip():  # what the runtime printed instead of running the scan (pct exec's refusal)
        t.problems.append(line.strip())


def _fold_workers(t: TargetCandidate) -> None:
    """A job whose parent is a job too (a rank under torchrun) is the parent's worker."""
    pids = {j.pid: j for j in t.jobs}
    top = []
    for j in t.jobs:
        parent = pids.get(j.ppid)
        if parent is not None:
            parent.workers.append(j.pid)
        else:
            top.append(j)
    t.jobs = top


def parse_report(text: str, host: str, *, user: str | None = None, port: int | None = None) -> HostReport:
    report = HostReport(host=host, user=user, port=port)
    section, arg = "", ""
    current: TargetCandidate | None = None
    last_rc_owner = ""
    confs: dict[str, list[str]] = {}
    ps_lines: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith("@@ "):
            head = line[3:].split(" ")
            if head[0] == "rc" and len(head) == 2 and head[1].lstrip("-").isdigit():
                if head[1] != "0":
                    report.problems.append(f"{last_rc_owner}: exited with {head[1]}")
                section = ""
                continue
            section, arg = head[0], " ".join(head[1:])
            current = None
            if section == "target" and len(head) == 3:
                runtime, ident = head[1], head[2]
                current = report.target(runtime, None if ident == "-" else ident)
                if current is None:
                    current = TargetCandidate(runtime=runtime, container=None if ident == "-" else ident)
                    report.targets.append(current)
                current.scanned = True
                last_rc_owner = f"{'host' if runtime == 'none' else 'container'}: scan of {current.label}"
            elif section in ("pct-list", "engine-ps", "squeue"):
                last_rc_owner = f"host: {section} {arg}".rstrip()
            elif section not in ("host", "pct-conf", "target"):
                report.malformed.append(line)
                section = ""
            continue
        if section == "host":
            parts = line.split("\t")
            if len(parts) == 3 and parts[0] == "K" and parts[1] == "tool":
                report.tools.append(parts[2])
            elif len(parts) == 3 and parts[0] == "E":
                report.problems.append(f"{parts[1]}: {parts[2]}")
            elif line.strip():
                report.malformed.append(line)
        elif section == "target" and current is not None:
            _scan_line(current, line, report)
        elif section == "pct-list":
            cols = line.split()
            if len(cols) >= 2 and cols[0].isdigit():
                name = cols[-1] if len(cols) >= 3 else ""
                t = report.target("pct", cols[0]) or TargetCandidate(runtime="pct", container=cols[0])
                t.status, t.name = cols[1], name
                if t not in report.targets:
                    report.targets.append(t)
            elif line.strip() and not line.startswith("VMID"):
                report.problems.append(f"host: pct list: {line.strip()}")
        elif section == "pct-conf":
            confs.setdefault(arg, []).append(line)
        elif section == "engine-ps":
            ps_lines.setdefault(arg, []).append(line)
        elif section == "squeue":
            cols = line.split("|")
            if len(cols) == 5:
                report.slurm_jobs.append(SlurmJob(*cols))
            elif line.strip():  # squeue's error lines: the last one says why (the rc follows)
                report.problems = [p for p in report.problems if not p.startswith("host: squeue: ")]
                report.problems.append(f"host: squeue: {line.strip()}")
        elif line.strip():
            report.malformed.append(line)
    for ctid, lines in confs.items():
        ct = report.target("pct", ctid)
        if ct is not None:
            ct.gpu_lines = gpu_lines("\n".join(lines))
    for engine, lines in ps_lines.items():
        _engine_rows(report, engine, lines)
    for t in report.targets:
        _fold_workers(t)
    return report


def _engine_rows(report: HostReport, engine: str, lines: list[str]) -> None:
    for line in lines:
        cols = line.split("|")
        if len(cols) != 4:
            if line.strip():
                report.problems.append(f"host: {engine} ps: {line.strip()}")
            continue
        cid, name, image, status = cols
        t = report.target(engine, name)
        if t is None:
            t = TargetCandidate(runtime=engine, container=name)
            report.targets.append(t)
        t.name, t.status = cid, ("running " + status) if status.startswith("Up") else status
        t.image = "" if image == "<no value>" else image
