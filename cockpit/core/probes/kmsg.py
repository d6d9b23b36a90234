"""The host's kernel messages: OOM kills, NVIDIA Xid errors, hung tasks, segfaults.

Kernel messages are read **on the host** (a container sees none, or only its own namespace's
view): run :func:`kmsg_command` with the transport's ``run_host``.  It prints the host's boot time
and then the newest ``lines`` messages from the first source that works:

1. ``dmesg --time-format iso`` (util-linux ≥ 2.26; absolute, zone-aware timestamps),
2. plain ``dmesg`` (``[seconds since boot]``; converted with the boot time),
3. ``journalctl -k -o short-iso`` (when ``dmesg`` is restricted, ``kernel.dmesg_restrict=1``,
   and the user may read the journal).

(``dmesg -T`` is avoided: its wall-clock conversion is wrong after suspend and it has no zone.)

:func:`parse_kmsg` turns the output into :class:`~cockpit.core.layers.Finding` objects:

``oom-kill`` (layer ``container``)
    ``Out of memory: Killed process …`` / ``Memory cgroup out of memory: Killed process …``,
    merged with the ``oom-kill:constraint=…,oom_memcg=/lxc/200,…`` line before it, which names
    the container (``/lxc/ID/`` or ``/lxc.payload.ID/``).
``xid`` (layer ``gpu``)
    ``NVRM: Xid (PCI:0000:01:00): 79, pid=…, name=…, GPU has fallen off the bus.``, grouped per
    (Xid, GPU, pid) with a count; :data:`XID_MEANINGS` gives each a short meaning and advice.
``hung-task`` (layer ``process``, ``gpu`` when its call trace is in the NVIDIA modules)
    ``INFO: task python3:1234 blocked for more than 120 seconds.``
``segfault`` (layer ``app``)
    ``python3[1234]: segfault at … in libfoo.so`` / ``traps: … general protection fault``.

Pids in kernel messages are host pids; :func:`oom_killed` therefore matches by pid *or* by name
(the kernel's 15-character ``comm``), after a time and optionally in one container.
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from ..layers import Finding, Layer, Severity

__all__ = [
    "kmsg_command",
    "KmsgLine",
    "KmsgReport",
    "parse_kmsg",
    "oom_killed",
    "XID_MEANINGS",
    "xid_meaning",
]

_MARK = "@@cockpit-kmsg"


def kmsg_command(lines: int = 3000, timeout: float = 5, *, dmesg: str = "dmesg", journalctl: str = "journalctl") -> str:
    """The host-side command (see the module docstring); exit status 0 in every case."""
    n = max(1, int(lines))
    t = max(1, int(round(float(timeout))))
    dm = shlex.quote(dmesg)
    jc = shlex.quote(journalctl)
    return (
        "_ck_b=; while read -r _ck_k _ck_v; do [ \"$_ck_k\" = btime ] && { _ck_b=$_ck_v; break; }; "
        "done </proc/stat 2>/dev/null; "
        f"echo \"{_MARK} btime $_ck_b\"; "
        f"_ck_t=; command -v timeout >/dev/null 2>&1 && _ck_t='timeout -k 1 {t}'; "
        f"if _ck_o=$($_ck_t {dm} --time-format iso 2>/dev/null) && [ -n \"$_ck_o\" ]; then "
        f"echo '{_MARK} dmesg-iso'; printf '%s\\n' \"$_ck_o\" | tail -n {n}; "
        f"elif _ck_o=$($_ck_t {dm} 2>/dev/null) && [ -n \"$_ck_o\" ]; then "
        f"echo '{_MARK} dmesg-raw'; printf '%s\\n' \"$_ck_o\" | tail -n {n}; "
        f"elif _ck_o=$($_ck_t {jc} -k -o short-iso --no-pager -q -n {n} 2>/dev/null) && [ -n \"$_ck_o\" ]; then "
        f"echo '{_MARK} journal'; printf '%s\\n' \"$_ck_o\"; "
        f"else echo '{_MARK} unavailable'; $_ck_t {dm} 2>&1 | tail -n 3; fi; true"
    )


# --------------------------------------------------------------------------------------------
# lines


@dataclass(frozen=True)
class KmsgLine:
    ts: float | None  # epoch seconds, when known
    uptime: float | None  # seconds since boot, when given
    text: str  # the message without its timestamp
    line_no: int = 0


@dataclass
class KmsgReport:
    source: str = "unknown"  # dmesg-iso | dmesg-raw | journal | unavailable | unknown
    boot_time: float | None = None
    findings: list[Finding] = field(default_factory=list)
    lines: list[KmsgLine] = field(default_factory=list)  # only with keep_lines=True
    line_count: int = 0
    error: str | None = None  # why no messages could be read

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "boot_time": self.boot_time,
            "findings": [f.to_dict() for f in self.findings],
            "line_count": self.line_count,
            "error": self.error,
        }


_ISO = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[,.]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+(?P<msg>.*)$"
)
_RAW = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s?(?P<msg>.*)$")
_CTIME = re.compile(r"^\[(?P<ct>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?(?P<msg>.*)$")
_JOURNAL_HOST = re.compile(r"^\S+ kernel: ")


def _parse_iso(ts: str) -> float | None:
    t = ts.replace(",", ".")
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    m = re.search(r"([+-])(\d\d)(\d\d)$", t)
    if m and t[m.start() - 1 : m.start()] != ":":
        t = t[: m.start()] + f"{m.group(1)}{m.group(2)}:{m.group(3)}"
    # Python 3.10's fromisoformat wants 3 or 6 fraction digits
    m = re.search(r"\.(\d+)", t)
    if m:
        frac = (m.group(1) + "000000")[:6]
        t = t[: m.start()] + "." + frac + t[m.end() :]
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        return None
    if dt.tzinfo is None:
        return time.mktime(dt.timetuple()) + dt.microsecond / 1e6
    return dt.timestamp()


def _split_line(line: str, boot: float | None) -> tuple[float | None, float | None, str]:
    m = _ISO.match(line)
    if m:
        msg = _JOURNAL_HOST.sub("", m.group("msg"), count=1)
        return _parse_iso(m.group("ts")), None, msg
    m = _RAW.match(line)
    if m:
        up = float(m.group("up"))
        return (boot + up if boot is not None else None), up, m.group("msg")
    m = _CTIME.match(line)
    if m:
        try:
            ts = time.mktime(time.strptime(m.group("ct"), "%a %b %d %H:%M:%S %Y"))
        except (ValueError, OverflowError):
            ts = None
        return ts, None, m.group("msg")
    return None, None, line


# --------------------------------------------------------------------------------------------
# Xid table

#: Xid → (short meaning, severity, advice).  From NVIDIA's Xid catalogue, condensed.
XID_MEANINGS: dict[int, tuple[str, Severity, str]] = {
    8: (
        'GPU stopped processing (timeout)',
        Severity.ERROR,
        'Usually a hung kernel in the app; restart it. If it repeats without an app cause, reset the GPU.',
    ),
    13: (
        'graphics engine exception (illegal access in a kernel)',
        Severity.ERROR,
        "Usually the app's kernel read out of bounds (or a driver bug): rerun with CUDA_LAUNCH_BLOCKING=1 "
        'and compute-sanitizer.',
    ),
    31: (
        'GPU memory page fault (illegal address)',
        Severity.ERROR,
        'Usually the app accessed an invalid address (use-after-free, bad index); rarely the driver. '
        'Restart the process.',
    ),
    32: (
        'invalid or corrupted push buffer stream',
        Severity.ERROR,
        'Driver or hardware (PCIe) problem: check the PCIe link and update the driver.',
    ),
    38: (
        'driver firmware error',
        Severity.ERROR,
        'Reset the GPU or reboot the host; update the driver.',
    ),
    43: (
        'GPU stopped processing (the app hit a fault)',
        Severity.WARNING,
        'The faulting process was stopped; the GPU keeps working. Fix or restart the app.',
    ),
    44: (
        'graphics engine fault during context switch',
        Severity.ERROR,
        'Reset the GPU or reboot the host.',
    ),
    45: (
        'preemptive cleanup after a previous error (a process was killed)',
        Severity.INFO,
        'Follows a killed or crashed GPU process; look at the earlier Xid or kill.',
    ),
    48: (
        'double-bit ECC error (uncorrectable memory error)',
        Severity.ERROR,
        'Hardware memory error: reset the GPU (pages get retired/rows remapped); if it repeats, replace '
        'the board.',
    ),
    61: (
        'internal micro-controller breakpoint/warning',
        Severity.ERROR,
        'Reset the GPU or reboot the host; update the driver.',
    ),
    62: (
        'internal micro-controller halt',
        Severity.ERROR,
        'Reset the GPU or reboot the host; update the driver.',
    ),
    63: (
        'ECC page retirement or row remapping recorded',
        Severity.WARNING,
        'A memory page was retired / a row remapped; a GPU reset applies it. Watch the count.',
    ),
    64: (
        'ECC page retirement or row remapping failed',
        Severity.ERROR,
        'Remapping failed: reset the GPU; if it repeats, the board needs service.',
    ),
    68: (
        'video decoder (NVDEC) exception',
        Severity.WARNING,
        'A decoder fault: restart the app; update the driver.',
    ),
    69: (
        'graphics engine class error',
        Severity.ERROR,
        'Restart the app; if it repeats, reset the GPU.',
    ),
    74: (
        'NVLink error',
        Severity.ERROR,
        'NVLink problem between GPUs: check nvidia-smi nvlink -s; reset the GPUs or reboot; may need '
        'service.',
    ),
    79: (
        'GPU has fallen off the bus',
        Severity.ERROR,
        'The GPU is gone from PCIe: reboot the host; if it recurs, check power, cooling and seating.',
    ),
    92: (
        'high single-bit ECC error rate',
        Severity.WARNING,
        'Memory is degrading: plan a GPU reset and watch the ECC counters.',
    ),
    94: (
        'contained ECC error (the affected app was stopped)',
        Severity.ERROR,
        'Only the affected process is hit: restart the app; reset the GPU when convenient to remap.',
    ),
    95: (
        'uncontained ECC error',
        Severity.ERROR,
        'Every process on the GPU is affected: reset the GPU (or reboot the host).',
    ),
    109: (
        'context switch timeout',
        Severity.ERROR,
        'A kernel ran too long or the GPU hung: restart the app; reset the GPU if it repeats.',
    ),
    119: (
        'GSP RPC timeout (GPU firmware did not answer)',
        Severity.ERROR,
        'The GPU firmware hung: reset the GPU or reboot the host; updating the driver often helps.',
    ),
    120: (
        'GSP error',
        Severity.ERROR,
        'GPU firmware error: reset the GPU or reboot the host; update the driver.',
    ),
    154: (
        'GPU recovery action changed (reset or reboot required)',
        Severity.ERROR,
        'The driver asks for a GPU reset or node reboot: do what nvidia-smi -q reports as the recovery '
        'action.',
    ),
}


def xid_meaning(xid: int) -> str:
    m = XID_MEANINGS.get(xid)
    return m[0] if m else "see NVIDIA's Xid catalogue"


# --------------------------------------------------------------------------------------------
# parsing

_OOM_KILL = re.compile(r"\boom-kill:(?P<kv>\S+)")
_KILLED = re.compile(
    r"(?P<kind>Memory cgroup out of memory|Out of memory(?: \([^)]*\))?)?:?\s*Killed process (?P<pid>\d+) "
    r"\((?P<comm>.*?)\)(?P<rest>.*)$"
)
_RSS = re.compile(r"(?P<k>total-vm|anon-rss|file-rss|shmem-rss):(?P<v>\d+)kB")
_LXC = re.compile(r"/lxc(?:/|\.payload\.)(?P<id>\d+)(?=/|$|,)")
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


def _kv(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def _container_of(*paths: str | None) -> str | None:
    for p in paths:
        if p:
            m = _LXC.search(p)
            if m:
                return m.group("id")
    return None


def parse_kmsg(text: str | bytes | None, *, boot_time: float | None = None, keep_lines: bool = False) -> KmsgReport:
    """Parse :func:`kmsg_command`'s output (or plain ``dmesg``/``journalctl -k`` text); never raises."""
    rep = KmsgReport(boot_time=boot_time)
    try:
        _parse(rep, text, keep_lines)
    except Exception as exc:  # pragma: no cover - defensive
        rep.error = f"could not read kernel messages: {exc!r}"
    return rep


def _parse(rep: KmsgReport, text: str | bytes | None, keep_lines: bool) -> None:
    if text is None:
        text = ""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "replace")
    body: list[str] = []
    unavailable: list[str] = []
    for raw in text.splitlines():
        if raw.startswith(_MARK):
            bits = raw.split()
            if len(bits) >= 2 and bits[1] == "btime":
                if len(bits) >= 3:
                    try:
                        rep.boot_time = float(bits[2])
                    except ValueError:
                        pass
            elif len(bits) >= 2:
                rep.source = bits[1]
            continue
        if rep.source == "unavailable":
            unavailable.append(raw)
        else:
            body.append(raw)
    if rep.source == "unavailable":
        rep.error = "no kernel messages readable on the host" + (f": {unavailable[-1].strip()}" if unavailable else "")
        return

    lines: list[KmsgLine] = []
    for i, raw in enumerate(body, 1):
        if not raw.strip():
            continue
        ts, up, msg = _split_line(raw, rep.boot_time)
        lines.append(KmsgLine(ts, up, msg, i))
    rep.line_count = len(lines)
    if keep_lines:
        rep.lines = lines

    oom_ctx: dict[str, Any] | None = None
    oom_ctx_at = -100
    xids: dict[tuple[int, str, str], Finding] = {}
    for idx, ln in enumerate(lines):
        msg = ln.text
        if "oom-kill:" in msg:
            m = _OOM_KILL.search(msg)
            if m:
                oom_ctx = _kv(m.group("kv"))
                oom_ctx_at = idx
            continue
        if "Killed process" in msg:
            m = _KILLED.search(msg)
            if m:
                ctx = oom_ctx if (oom_ctx is not None and idx - oom_ctx_at <= 8) else None
                if ctx is not None and ctx.get("pid") not in (None, m.group("pid")):
                    ctx = None
                rep.findings.append(_oom_finding(m, ctx, ln))
                oom_ctx = None
            continue
        if "Xid" in msg:
            m = _XID.search(msg)
            if m:
                _xid_finding(m, ln, xids, rep.findings)
            continue
        if "fallen off the bus" in msg:
            m = _GPU_OFF_BUS.search(msg)
            if m:
                _xid_like_lost(m.group("bus"), ln, xids, rep.findings)
            continue
        if "blocked for more than" in msg:
            m = _HUNG.search(msg)
            if m:
                rep.findings.append(_hung_finding(m, ln, lines[idx + 1 : idx + 80]))
            continue
        if "segfault at" in msg or "general protection" in msg or "traps:" in msg:
            m = _SEGV.search(msg) or _TRAPS.search(msg)
            if m:
                rep.findings.append(_segv_finding(m, ln))


def _fmt_kb(kb: int) -> str:
    if kb >= 1048576:
        return f"{kb / 1048576:.1f} GiB"
    if kb >= 1024:
        return f"{kb / 1024:.0f} MiB"
    return f"{kb} KiB"


def _oom_finding(m: "re.Match[str]", ctx: dict[str, str] | None, ln: KmsgLine) -> Finding:
    pid = int(m.group("pid"))
    comm = m.group("comm")
    rss = {r.group("k"): int(r.group("v")) for r in _RSS.finditer(m.group("rest"))}
    memcg_kind = bool(m.group("kind") and m.group("kind").startswith("Memory cgroup"))
    constraint = ctx.get("constraint") if ctx else None
    container = _container_of(ctx.get("task_memcg") if ctx else None, ctx.get("oom_memcg") if ctx else None)
    anon = rss.get("anon-rss")
    where = f" in container {container}" if container else ""
    if memcg_kind or constraint == "CONSTRAINT_MEMCG":
        why = "its memory cgroup hit its limit"
        advice = (
            "The container's memory limit was reached: raise it (`pct set ID --memory MiB` on Proxmox) or "
            "lower the job's RAM use (dataloader workers, pinned memory, loading weights in full precision)."
        )
    else:
        why = "the host ran out of memory"
        advice = (
            "The whole host ran out of RAM: look for other big consumers on the host and lower the job's RAM "
            "use; add swap or memory."
        )
    summary = f"the OOM killer killed pid {pid} ({comm}){where}: {why}"
    if anon is not None:
        summary += f" (anon-rss {_fmt_kb(anon)})"
    return Finding(
        layer=Layer.CONTAINER,
        kind="oom-kill",
        summary=summary,
        advice=advice,
        severity=Severity.ERROR,
        subject={
            "pid": pid,
            "comm": comm,
            "container": container,
            "constraint": constraint,
            "memcg": bool(memcg_kind or constraint == "CONSTRAINT_MEMCG"),
            "oom_memcg": ctx.get("oom_memcg") if ctx else None,
            "task_memcg": ctx.get("task_memcg") if ctx else None,
            "total_vm_kb": rss.get("total-vm"),
            "anon_rss_kb": anon,
            "file_rss_kb": rss.get("file-rss"),
            "shmem_rss_kb": rss.get("shmem-rss"),
            "uid": int(ctx["uid"]) if ctx and ctx.get("uid", "").isdigit() else None,
            "ts": ln.ts,
            "uptime": ln.uptime,
            "line": ln.text,
        },
    )


def _xid_finding(m: "re.Match[str]", ln: KmsgLine, seen: dict, findings: list[Finding]) -> None:
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


def _xid_like_lost(bus: str, ln: KmsgLine, seen: dict, findings: list[Finding]) -> None:
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


def _hung_finding(m: "re.Match[str]", ln: KmsgLine, after: Iterable[KmsgLine]) -> Finding:
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


def _segv_finding(m: "re.Match[str]", ln: KmsgLine) -> Finding:
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


# --------------------------------------------------------------------------------------------
# questions


def oom_killed(
    findings: Iterable[Finding],
    pid_or_name: int | str,
    since: float | None = None,
    *,
    container: int | str | None = None,
) -> Finding | None:
    """The latest OOM kill of this process, or None.

    ``pid_or_name``: a host pid (int), or a process name (str; the kernel keeps 15 characters of
    ``comm``, so longer names match on their first 15).  ``since``: only kills at or after this
    epoch time (a kill whose time is unknown does not count when ``since`` is given).
    ``container``: only kills in this container, or whose container is unknown.
    """
    best: Finding | None = None
    for f in findings:
        if f.kind != "oom-kill":
            continue
        s = f.subject
        if isinstance(pid_or_name, int) and not isinstance(pid_or_name, bool):
            if s.get("pid") != pid_or_name:
                continue
        else:
            name = str(pid_or_name)
            comm = str(s.get("comm") or "")
            if not comm or not (name == comm or name[:15] == comm[:15]):
                continue
        if since is not None:
            ts = s.get("ts")
            if ts is None or ts < since:
                continue
        if container is not None and s.get("container") not in (None, str(container)):
            continue
        if best is None or (s.get("ts") or 0) >= (best.subject.get("ts") or 0):
            best = f
    return best
