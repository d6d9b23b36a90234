"""Findings in the host's kernel messages: :func:`add_findings` reads :class:`~.lines.KmsgLine` objects.

``oom-kill`` (layer ``container``)
    see :mod:`.oom`.
``xid`` (layer ``gpu``)
    ``NVRM: Xid (PCI:0000:01:00): 79, pid=…, name=…, GPU has fallen off the bus.``, grouped per
    (Xid, GPU, pid) with a count; :data:`~.xid.XID_MEANINGS` gives each a short meaning and advice.
``gpu-lost`` (layer ``gpu``)
    ``NVRM: GPU at PCI:…: GPU has fallen off the bus`` without an Xid 79 for the same GPU.
``hung-task`` (layer ``process``, ``gpu`` when its call trace is in the NVIDIA modules)
    ``INFO: task python3:1234 blocked for more than 120 seconds.``
``segfault`` (layer ``app``)
    ``python3[1234]: segfault at … in libfoo.so`` / ``traps: … general protection fault``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...layers import Finding, Layer, Severity
from .lines import KmsgLine
from .oom import oom_context, oom_kill_finding
from .xid import XID_MEANINGS, xid_meaning

__all__ = ["add_findings"]

#: Xid findings seen so far, to count repeats: ``(xid, bus, pid)``, or ``("lost", bus, "")``
_Seen = dict[tuple[int | str, str, str], Finding]

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): (?P<xid>\d+)(?:,\s*(?P<rest>.*))?$"
)
_XID_PID = re.compile(r"pid='?(?P<pid><unknown>|\d+)'?,\s*name=(?P<name><unknown>|[^,]*?),\s*")
_GPU_OFF_BUS = re.compile(r"NVRM: GPU (?:at PCI:)?(?P<bus>[0-9a-fA-F:.]+):? GPU has fallen off the bus")
_HUNG = re.compile(r"INFO: task (?P<comm>.+?):(?P<pid>\d+) blocked for more than (?P<secs>\d+) seconds")
_NV_TRACE = re.compile(r"\[nvidia(?:_uvm|_modeset|_drm|_peermem)?\]|\b(?:nv|uvm|_nv\d+)\w*\+0x")
_SEGV = re.compile(
    r"(?P<comm>[^\s\[]+)\[(?P<pid>\d+)\]: (?P<what>segfault at \w+|general protection fault|trap \w+)"
    r"(?:.*? in (?P<lib>[^\s\[]+))?"
)
_TRAPS = re.compile(r"traps: (?P<comm>[^\s\[]+)\[(?P<pid>\d+)\] (?P<what>general protection fault|trap [\w ]+?)(?: ip|$)")


def add_findings(lines: list[KmsgLine], findings: list[Finding]) -> None:
    """Append the findings in ``lines`` (in order) to ``findings``."""
    oom_ctx: dict[str, str] | None = None
    oom_ctx_at = -100
    xids: _Seen = {}
    for idx, ln in enumerate(lines):
        msg = ln.text
        if "oom-kill:" in msg:
            ctx = oom_context(msg)
            if ctx is not None:
                oom_ctx, oom_ctx_at = ctx, idx
            continue
        if "Killed process" in msg:
            f = oom_kill_finding(ln, oom_ctx if (oom_ctx is not None and idx - oom_ctx_at <= 8) else None)
            if f is not None:
                findings.append(f)
                oom_ctx = None
            continue
        if "Xid" in msg:
            m = _XID.search(msg)
            if m:
                _xid_finding(m, ln, xids, findings)
            continue
        if "fallen off the bus" in msg:
            m = _GPU_OFF_BUS.search(msg)
            if m:
                _xid_like_lost(m.group("bus"), ln, xids, findings)
            continue
        if "blocked for more than" in msg:
            m = _HUNG.search(msg)
            if m:
                findings.append(_hung_finding(m, ln, lines[idx + 1 : idx + 80]))
            continue
        if "segfault at" in msg or "general protection" in msg or "traps:" in msg:
            m = _SEGV.search(msg) or _TRAPS.search(msg)
            if m:
                findings.append(_segv_finding(m, ln))


def _xid_finding(m: re.Match[str], ln: KmsgLine, seen: _Seen, findings: list[Finding]) -> None:
    xid = int(m.group("xid"))
    bus = m.group("bus")
    rest = m.group("rest") or ""
    pid: int | None = None
    name: str | None = None
    pm = _XID_PID.match(rest)
    if pm:
        if pm.group("pid").isdigit():
            pid = int(pm.group("pid"))
        name = pm.group("name") if pm.group("name") != "<unknown>" else None
        rest = rest[pm.end() :]
    key = (xid, bus, str(pid))
    f = seen.get(key)
    if f is not None:
        f.subject["count"] += 1
        f.subject["last_ts"] = ln.ts
        f.summary = _xid_summary(xid, bus, pid, name, f.subject["count"])
        return
    meaning, sev, advice = XID_MEANINGS.get(xid, ("see NVIDIA's Xid catalogue", Severity.ERROR, "Look the Xid up in NVIDIA's catalogue; check nvidia-smi -q."))
    f = Finding(
        layer=Layer.GPU,
        kind="xid",
        summary=_xid_summary(xid, bus, pid, name, 1),
        advice=advice,
        severity=sev,
        subject={
            "xid": xid,
            "meaning": meaning,
            "bus_id": bus,
            "pid": pid,
            "name": name,
            "message": rest.strip(),
            "count": 1,
            "ts": ln.ts,
            "last_ts": ln.ts,
            "uptime": ln.uptime,
            "line": ln.text,
        },
    )
    seen[key] = f
    findings.append(f)


def _xid_summary(xid: int, bus: str, pid: int | None, name: str | None, count: int) -> str:
    s = f"Xid {xid} on GPU {bus}: {xid_meaning(xid)}"
    if pid is not None:
        s += f" (pid {pid}{', ' + name if name else ''})"
    if count > 1:
        s += f" ×{count}"
    return s


def _xid_like_lost(bus: str, ln: KmsgLine, seen: _Seen, findings: list[Finding]) -> None:
    bus = bus.rstrip(":")
    key = ("lost", bus, "")
    if key in seen or any(k[0] == 79 and bus.lower().startswith(k[1].lower()[:12]) for k in seen if isinstance(k[0], int)):
        return
    f = Finding(
        layer=Layer.GPU,
        kind="gpu-lost",
        summary=f"GPU {bus} has fallen off the bus",
        advice=XID_MEANINGS[79][2],
        severity=Severity.ERROR,
        subject={"bus_id": bus, "ts": ln.ts, "uptime": ln.uptime, "line": ln.text},
    )
    seen[key] = f
    findings.append(f)


def _hung_finding(m: re.Match[str], ln: KmsgLine, after: Iterable[KmsgLine]) -> Finding:
    in_nv = False
    for a in after:
        if "blocked for more than" in a.text:
            break
        if _NV_TRACE.search(a.text):
            in_nv = True
            break
    pid = int(m.group("pid"))
    comm = m.group("comm")
    secs = int(m.group("secs"))
    return Finding(
        layer=Layer.GPU if in_nv else Layer.PROCESS,
        kind="hung-task",
        summary=f"task {comm}:{pid} blocked in the kernel for more than {secs}s"
        + (" (in the NVIDIA driver)" if in_nv else ""),
        advice=(
            "It waits in the NVIDIA driver and cannot be killed: look for an Xid around this time; a GPU reset "
            "or host reboot is usually needed."
            if in_nv
            else "It waits in the kernel (D state) and cannot be killed: check storage (NFS, disks) and memory "
            "pressure; a container or host reboot clears it."
        ),
        severity=Severity.ERROR,
        subject={"pid": pid, "comm": comm, "blocked_s": secs, "nvidia": in_nv, "ts": ln.ts, "uptime": ln.uptime,
                 "line": ln.text},
    )


def _segv_finding(m: re.Match[str], ln: KmsgLine) -> Finding:
    pid = int(m.group("pid"))
    comm = m.group("comm")
    lib = m.groupdict().get("lib")
    what = m.group("what").split(" at ")[0]
    return Finding(
        layer=Layer.APP,
        kind="segfault",
        summary=f"{comm} (pid {pid}) crashed: {what}" + (f" in {lib}" if lib else ""),
        advice="A native crash (C/CUDA extension, mismatched builds): the job's log may hold faulthandler's stack.",
        severity=Severity.ERROR,
        subject={"pid": pid, "comm": comm, "lib": lib, "ts": ln.ts, "uptime": ln.uptime, "line": ln.text},
    )
