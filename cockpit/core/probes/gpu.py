"""GPUs through ``nvidia-smi``: one probe command, a parser that never raises, NA values.

The probe (:func:`gpu_query_command`) runs both queries (``--query-gpu`` and
``--query-compute-apps``, ``--format=csv,noheader,nounits``) in one shell command and frames
each query's output with its exit status::

    @@cockpit-gpu query-gpu
    0, NVIDIA H100 80GB HBM3, GPU-5f2c…, …
    @@cockpit-gpu rc 0
    @@cockpit-gpu compute-apps
    48213, /usr/bin/python3, 71234, GPU-5f2c…
    @@cockpit-gpu rc 0

nvidia-smi writes its own failures (``NVIDIA-SMI has failed …``) to stdout, so both streams are
captured together inside the frame.  The process list is only asked for when the GPU query worked.

A hung nvidia-smi is the normal symptom of a wedged driver, and a process stuck in the driver
ignores even SIGKILL, so ``timeout`` (which waits for its child after killing it) would hang with
it.  Instead each query runs in the background with its output in a temp file, and the shell polls
``/proc/PID/stat`` (no fork per poll).  Past the deadline it sends SIGKILL; a query that is still
there after that is reported ``stuck`` and abandoned, so the probe always returns.

Values are read with :func:`parse_value`: ``[N/A]``, ``[Not Supported]``,
``[Insufficient Permissions]`` and anything unreadable become :class:`NaType` values (``N/A`` in
text, ``nan`` in arithmetic, falsy, never raising), keeping the reason.  Failures of nvidia-smi
itself become :class:`~cockpit.core.layers.Finding` objects in layer ``gpu`` (``container`` when
the binary is missing from the container, or the container cannot write a temp file).
"""

from __future__ import annotations

import math
import re
import shlex
import time
from dataclasses import dataclass, field, fields
from typing import Any, Iterable

from ..layers import Finding, Layer, Severity

__all__ = [
    "NaType",
    "NA",
    "is_na",
    "parse_value",
    "GpuField",
    "GPU_FIELDS",
    "APP_FIELDS",
    "gpu_query_command",
    "GPU",
    "GPUProcess",
    "GPUSnapshot",
    "parse_gpu_output",
    "unaccounted_memory",
]


# --------------------------------------------------------------------------------------------
# NA


class NaType:
    """A missing value that keeps why it is missing.

    ``str()`` is ``"N/A"``; ``float()`` and arithmetic with numbers give ``nan``; it is falsy;
    ordering comparisons are always ``False`` (as with ``nan``) and never raise; every NA equals
    every other NA (the reason is not part of equality).  ``format(na, ">7.1f")`` gives a padded
    ``"N/A"``, so tables can format numbers and NAs alike.
    """

    __slots__ = ("reason",)

    def __init__(self, reason: str = "[N/A]"):
        self.reason = reason

    def __str__(self) -> str:
        return "N/A"

    def __repr__(self) -> str:
        return f"NA({self.reason!r})"

    def __format__(self, spec: str) -> str:
        m = re.match(r"(?P<fa>(?:.?[<>=^])?)[+\- ]?z?#?0?(?P<w>\d*)", spec or "")
        align = m.group("fa") if m else ""
        width = m.group("w") if m else ""
        if align.endswith("=") or (not align and width):
            align = align[:-1] + ">" if align else ">"
        try:
            return format("N/A", f"{align}{width}")
        except ValueError:
            return "N/A"

    def __bool__(self) -> bool:
        return False

    def __float__(self) -> float:
        return math.nan

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NaType)

    def __ne__(self, other: object) -> bool:
        return not isinstance(other, NaType)

    def __hash__(self) -> int:
        return hash("N/A")

    def __lt__(self, other: object) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def _arith(self, other: object) -> Any:
        if isinstance(other, (int, float, NaType)):
            return math.nan
        return NotImplemented

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arith
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _arith
    __pow__ = __rpow__ = _arith

    def __neg__(self) -> float:
        return math.nan

    __pos__ = __abs__ = __neg__

    def __round__(self, ndigits: int | None = None) -> "NaType":
        return self

    def __reduce__(self) -> tuple:
        return (NaType, (self.reason,))


#: The plain missing value (reason ``[N/A]``).
NA = NaType("[N/A]")

def is_na(value: object) -> bool:
    return isinstance(value, NaType)


_BRACKETED = re.compile(r"\[[^\]]*\]\Z")


def parse_value(text: str | None, kind: type = str) -> Any:
    """One field of nvidia-smi's csv output: ``int``, ``float`` or ``str``; NA when missing."""
    if text is None:
        return NaType("missing")
    t = text.strip()
    if not t:
        return NaType("missing")
    if _BRACKETED.match(t):
        return NaType(t)
    if t in ("N/A", "Not Supported", "Unknown Error"):
        return NaType(f"[{t}]")
    if kind is str:
        return t
    try:
        if kind is int:
            try:
                return int(t)
            except ValueError:
                f = float(t)
                if math.isfinite(f):
                    return int(f)
                raise
        v = float(t)
        if math.isnan(v):
            return NaType(f"unparseable: {t[:40]!r}")
        return v
    except ValueError:
        return NaType(f"unparseable: {t[:40]!r}")


# --------------------------------------------------------------------------------------------
# fields


@dataclass(frozen=True)
class GpuField:
    """One column of a query: the :class:`GPU`/:class:`GPUProcess` attribute, the exact nvidia-smi
    field, its type, and what it means."""

    attr: str
    query: str
    kind: type
    doc: str


#: ``--query-gpu`` columns, in order.  Every field is valid on drivers 470 … 570.
GPU_FIELDS: tuple[GpuField, ...] = (
    GpuField("index", "index", int, "Zero-based index of the GPU, as nvidia-smi numbers them."),
    GpuField("name", "name", str, "Product name, e.g. 'NVIDIA H100 80GB HBM3'."),
    GpuField("uuid", "uuid", str, "Globally unique id 'GPU-…'; compute apps refer to it."),
    GpuField("bus_id", "pci.bus_id", str, "PCI bus id 'domain:bus:device.function' (Xid lines name it)."),
    GpuField("driver_version", "driver_version", str, "Installed NVIDIA driver version."),
    GpuField("pstate", "pstate", str, "Performance state, P0 (max) … P12 (min)."),
    GpuField("temperature_c", "temperature.gpu", int, "Core GPU temperature, degrees C."),
    GpuField("utilization_pct", "utilization.gpu", int, "Percent of time a kernel ran over the last sample period."),
    GpuField("memory_utilization_pct", "utilization.memory", int, "Percent of time device memory was read or written."),
    GpuField("memory_used_mib", "memory.used", int, "Device memory allocated by active contexts, MiB."),
    GpuField("memory_total_mib", "memory.total", int, "Total installed device memory, MiB."),
    GpuField("power_draw_w", "power.draw", float, "Board power draw, W ([N/A] on some boards and vGPUs)."),
    GpuField("power_limit_w", "power.limit", float, "Software power limit, W."),
    GpuField("fan_pct", "fan.speed", int, "Fan speed as percent of maximum ([N/A] on passively cooled boards)."),
    GpuField("mig_mode", "mig.mode.current", str, "MIG mode: Enabled, Disabled, or [N/A] where unsupported."),
    GpuField(
        "ecc_uncorrected",
        "ecc.errors.uncorrected.volatile.total",
        int,
        "Uncorrected ECC errors since the driver loaded ([N/A] without ECC).",
    ),
)

#: ``--query-compute-apps`` columns, in order (``process_name`` may contain ", ").
APP_FIELDS: tuple[GpuField, ...] = (
    GpuField("pid", "pid", int, "Process id, in the PID namespace the driver reports (the host's)."),
    GpuField("process_name", "process_name", str, "Process name (path of the executable)."),
    GpuField("used_memory_mib", "used_memory", int, "Device memory the context uses, MiB ([N/A] under MIG)."),
    GpuField("gpu_uuid", "gpu_uuid", str, "The GPU this context lives on."),
)

_MARK = "@@cockpit-gpu"


def _poll_schedule(timeout: float) -> str:
    """Sleeps that add up to ``timeout``: 5 ms doubling to 0.1 s, then 0.1 s steps."""
    out, total, step = [], 0.0, 0.005
    while total < timeout:
        out.append(f"{step:g}")
        total += step
        step = min(0.1, step * 2)
    return " ".join(out)


def gpu_query_command(nvidia_smi: str = "nvidia-smi", timeout: float = 5) -> str:
    """One ``sh`` command running both queries under a deadline, framed (see module doc).

    ``nvidia_smi`` is the binary (inside ``pct exec`` PATH is minimal: ``/usr/bin/nvidia-smi``);
    ``timeout`` is the deadline of each query, seconds.
    """
    timeout = max(0.1, float(timeout))
    fast = _poll_schedule(timeout)
    slow = " ".join(["1"] * max(1, int(math.ceil(timeout))))
    smi = shlex.quote(nvidia_smi)
    gpu_q = ",".join(f.query for f in GPU_FIELDS)
    app_q = ",".join(f.query for f in APP_FIELDS)
    fmt = "--format=csv,noheader,nounits"
    return (
        # poll the query often at first (a healthy nvidia-smi answers in tens of ms), then every
        # 0.1 s until the deadline; where sleep takes whole seconds only, once a second
        f"_cg_w='{fast}'; sleep 0.001 2>/dev/null || _cg_w='{slow}'; "
        "_cg_alive() { _cg_st=; read -r _cg_st 2>/dev/null </proc/$1/stat || return 1; "
        "case $_cg_st in *') Z '*|*') X '*) return 1;; esac; return 0; }; "
        "_cg_q() { _cg_f=$(mktemp 2>/dev/null) || _cg_f=${TMPDIR:-/tmp}/.cockpit-gpu.$$; "
        f"if ! : >\"$_cg_f\" 2>/dev/null; then echo '{_MARK} rc 200 notmp'; return 200; fi; "
        "\"$@\" >\"$_cg_f\" 2>&1 & _cg_p=$!; "
        "for _cg_s in $_cg_w; do _cg_alive $_cg_p || break; sleep $_cg_s; done; "
        "if _cg_alive $_cg_p; then kill -9 $_cg_p 2>/dev/null; sleep 0.1 2>/dev/null || sleep 1; "
        f"if _cg_alive $_cg_p; then cat \"$_cg_f\"; rm -f \"$_cg_f\"; echo '{_MARK} rc 124 stuck'; return 124; fi; "
        f"wait $_cg_p; cat \"$_cg_f\"; rm -f \"$_cg_f\"; echo '{_MARK} rc 124 timeout'; return 124; fi; "
        f"wait $_cg_p; _cg_r=$?; cat \"$_cg_f\"; rm -f \"$_cg_f\"; echo \"{_MARK} rc $_cg_r\"; return $_cg_r; }}; "
        f"echo '{_MARK} query-gpu'; "
        f"if _cg_q {smi} --query-gpu={gpu_q} {fmt}; then "
        f"echo '{_MARK} compute-apps'; _cg_q {smi} --query-compute-apps={app_q} {fmt}; fi; true"
    )


# --------------------------------------------------------------------------------------------
# data


@dataclass
class GPU:
    """One GPU; every numeric attribute may be an :class:`NaType`."""

    index: Any = NA
    """``index``"""
    name: Any = NA
    """``name``"""
    uuid: Any = NA
    """``uuid``"""
    bus_id: Any = NA
    """``pci.bus_id``"""
    driver_version: Any = NA
    """``driver_version``"""
    pstate: Any = NA
    """``pstate``"""
    temperature_c: Any = NA
    """``temperature.gpu`` (°C)"""
    utilization_pct: Any = NA
    """``utilization.gpu`` (%)"""
    memory_utilization_pct: Any = NA
    """``utilization.memory`` (%)"""
    memory_used_mib: Any = NA
    """``memory.used`` (MiB)"""
    memory_total_mib: Any = NA
    """``memory.total`` (MiB)"""
    power_draw_w: Any = NA
    """``power.draw`` (W)"""
    power_limit_w: Any = NA
    """``power.limit`` (W)"""
    fan_pct: Any = NA
    """``fan.speed`` (%)"""
    mig_mode: Any = NA
    """``mig.mode.current``"""
    ecc_uncorrected: Any = NA
    """``ecc.errors.uncorrected.volatile.total``"""

    @property
    def memory_free_mib(self) -> Any:
        if is_na(self.memory_total_mib) or is_na(self.memory_used_mib):
            return NaType("[N/A]")
        return self.memory_total_mib - self.memory_used_mib

    @property
    def memory_pct(self) -> Any:
        if is_na(self.memory_total_mib) or is_na(self.memory_used_mib) or not self.memory_total_mib:
            return NaType("[N/A]")
        return 100.0 * self.memory_used_mib / self.memory_total_mib

    def na_reasons(self) -> dict[str, str]:
        return {f.name: getattr(self, f.name).reason for f in fields(self) if is_na(getattr(self, f.name))}

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GPU":
        return cls(**{f.name: _from_json(d.get(f.name)) for f in fields(cls)})


@dataclass
class GPUProcess:
    """One compute context.  ``pid`` is in the driver's PID namespace (the host's)."""

    pid: Any = NA
    """``pid``"""
    process_name: Any = NA
    """``process_name``"""
    used_memory_mib: Any = NA
    """``used_memory`` (MiB)"""
    gpu_uuid: Any = NA
    """``gpu_uuid``"""
    gpu_index: Any = NA
    """the index of the GPU with ``gpu_uuid`` in the same snapshot"""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _jsonable(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GPUProcess":
        return cls(**{f.name: _from_json(d.get(f.name)) for f in fields(cls)})


def _jsonable(v: Any) -> Any:
    return v.reason if is_na(v) else v


def _from_json(v: Any) -> Any:
    if v is None:
        return NaType("missing")
    if isinstance(v, str) and (v.startswith("[") or v.startswith("unparseable") or v == "missing"):
        return NaType(v)
    return v


@dataclass
class GPUSnapshot:
    """One tick of GPU observation."""

    gpus: list[GPU] = field(default_factory=list)
    processes: list[GPUProcess] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    collected_at: float = field(default_factory=time.time)
    error: str | None = None  # the first error finding's summary, for a one-line status
    exit_codes: dict[str, int] = field(default_factory=dict)  # query name -> exit status
    unparsed: list[str] = field(default_factory=list)  # output lines that were not data

    @property
    def ok(self) -> bool:
        return self.error is None

    def gpu_by_uuid(self, uuid: str) -> GPU | None:
        return next((g for g in self.gpus if g.uuid == uuid), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpus": [g.to_dict() for g in self.gpus],
            "processes": [p.to_dict() for p in self.processes],
            "findings": [f.to_dict() for f in self.findings],
            "collected_at": round(self.collected_at, 3),
            "error": self.error,
            "exit_codes": dict(self.exit_codes),
            "unparsed": list(self.unparsed),
        }


# --------------------------------------------------------------------------------------------
# parsing


def _to_text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data).decode("utf-8", "replace")
    return str(data)


def _split_row(line: str, spec: tuple[GpuField, ...], free: int) -> list[str] | None:
    parts = [p.strip() for p in line.split(",")]
    n = len(spec)
    if len(parts) < n:
        return None
    if len(parts) > n:  # the free-text field contained commas
        extra = len(parts) - n
        parts = parts[:free] + [", ".join(parts[free : free + extra + 1])] + parts[free + extra + 1 :]
    return parts


def _row(line: str, spec: tuple[GpuField, ...], free: int, cls: type) -> Any:
    parts = _split_row(line, spec, free)
    if parts is None:
        return None
    values = {f.attr: parse_value(v, f.kind) for f, v in zip(spec, parts, strict=True)}
    first = values[spec[0].attr]
    # a data row starts with a number (index / pid); anything else is a message line
    if is_na(first) and first.reason.startswith("unparseable"):
        return None
    return cls(**values)


_FRAME = re.compile(rf"^{_MARK} (?P<what>query-gpu|compute-apps|rc (?P<rc>-?\d+)(?: (?P<flag>\w+))?)\s*$")

_ERR_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Driver/library version mismatch", re.I), "nvml-mismatch"),
    (re.compile(r"couldn't communicate with the NVIDIA driver", re.I), "driver-not-loaded"),
    (re.compile(r"couldn't find libnvidia-ml\.so|libnvidia-ml\.so[^\n]*(?:cannot open|not found)", re.I), "nvml-missing"),
    (re.compile(r"Unable to determine the device handle|GPU is lost|fallen off the bus", re.I), "gpu-lost"),
    (re.compile(r"No devices were found", re.I), "no-devices"),
    (re.compile(r"is not a valid field to query|Invalid combination of input arguments", re.I), "query-unsupported"),
    (re.compile(r"Insufficient Permissions", re.I), "permissions"),
    (re.compile(r"Failed to initialize NVML: Unknown Error", re.I), "nvml-unknown"),
    (re.compile(r"(?:nvidia-smi|^sh|^bash|: )[^\n]*(?:not found|No such file or directory)", re.I | re.M), "not-found"),
]

_EXIT_KIND = {
    9: "driver-not-loaded",
    12: "nvml-missing",
    15: "gpu-lost",
    18: "nvml-mismatch",
    6: "no-devices",
    4: "permissions",
    2: "query-unsupported",
    126: "not-executable",
    127: "not-found",
}


def _diagnose(rc: int, flag: str | None, text: str, what: str, timeout_s: float | None) -> Finding:
    body = text.strip()
    first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
    kind = None
    if flag == "stuck":
        kind = "gpu-stuck"
    elif flag == "timeout" or rc in (124, 137):
        kind = "gpu-timeout"
    elif flag == "notmp" or rc == 200:
        kind = "tmp-unwritable"
    else:
        for pat, k in _ERR_PATTERNS:
            if pat.search(body):
                kind = k
                break
        if kind is None:
            kind = _EXIT_KIND.get(rc, "nvidia-smi-failed")
    subj = {"exit_code": rc, "query": what, "output": body[-2000:]}
    layer = Layer.GPU
    sev = Severity.ERROR
    if kind == "gpu-stuck":
        summary = "nvidia-smi hung and ignores SIGKILL: it is stuck in the NVIDIA driver"
        advice = (
            "The driver is wedged: check the host's kernel messages for an Xid (79: fallen off the bus); "
            "jobs using this GPU will hang too. Reset the GPU (nvidia-smi -r, all its processes stopped) "
            "or reboot the host."
        )
    elif kind == "gpu-timeout":
        summary = f"nvidia-smi did not answer within {timeout_s:g}s" if timeout_s else "nvidia-smi timed out"
        advice = (
            "A hung nvidia-smi usually means the driver waits on a hung GPU: check the host's kernel messages "
            "for an Xid. Without persistence mode every call re-initialises the GPUs (slow with many): "
            "`nvidia-smi -pm 1` on the host. If it keeps hanging, reset the GPU or reboot the host."
        )
    elif kind == "tmp-unwritable":
        layer = Layer.CONTAINER
        summary = "the GPU probe could not create a temp file in the container (disk full?)"
        advice = "Check `df -h /tmp` inside the container and free space."
    elif kind == "not-found":
        layer = Layer.CONTAINER
        summary = "nvidia-smi is not installed or not mounted in the container"
        advice = (
            "The NVIDIA userspace is not visible here: bind-mount the host's nvidia-smi and libnvidia-ml.so "
            "into the container (lxc.mount.entry) or install the same driver version's utilities without "
            "the kernel module; or set the nvidia-smi path in the config (PATH is minimal under pct exec)."
        )
    elif kind == "not-executable":
        layer = Layer.CONTAINER
        summary = "nvidia-smi exists in the container but cannot be executed"
        advice = "Check the binary's permissions and that its mount is not noexec."
    elif kind == "nvml-mismatch":
        summary = "NVML driver/library version mismatch"
        advice = (
            "The loaded kernel module and the userspace libraries differ (driver upgraded without a reboot, or "
            "the container's libnvidia-ml is another version): reboot the host, or make the container's "
            "libraries match /proc/driver/nvidia/version on the host."
        )
    elif kind == "driver-not-loaded":
        summary = "nvidia-smi cannot talk to the NVIDIA driver"
        advice = (
            "On the host: is the module loaded (`lsmod | grep nvidia`, `nvidia-smi`)? In the container: are "
            "/dev/nvidia* present and allowed (lxc.cgroup2.devices.allow: c 195:* rwm, mount entries)?"
        )
    elif kind == "nvml-missing":
        summary = "libnvidia-ml.so (NVML) not found"
        advice = (
            "The driver's userspace library is not installed or not mounted in the container: mount the "
            "host's libnvidia-ml.so.1 (same version as the host's module) and run ldconfig."
        )
    elif kind == "gpu-lost":
        m = re.search(r"(?:handle for GPU\s*|GPU )([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)", body)
        summary = f"GPU {m.group(1)} is lost (fallen off the bus?)" if m else "a GPU is lost (fallen off the bus?)"
        advice = (
            "Check the host's kernel messages for Xid 79; the GPU needs a host reboot (a reset rarely helps). "
            "If it recurs, check power, cooling and PCIe seating."
        )
        if m:
            subj["bus_id"] = m.group(1)
    elif kind == "no-devices":
        summary = "nvidia-smi found no GPU"
        advice = (
            "The container has no /dev/nvidiaN device nodes (or the host lost its GPUs): check the container's "
            "device entries and `nvidia-smi` on the host."
        )
    elif kind == "query-unsupported":
        sev = Severity.WARNING
        summary = "this nvidia-smi does not know a queried field"
        advice = "The driver is older than cockpit expects (470+): update it, or report the field."
    elif kind == "permissions":
        summary = "nvidia-smi: insufficient permissions"
        advice = "The user cannot open /dev/nvidia*: check the device nodes' permissions and cgroup device rules."
    elif kind == "nvml-unknown":
        summary = "NVML failed to initialise (Unknown Error)"
        advice = (
            "In containers this usually means device access was revoked (cgroup device rules reset on the host, "
            "e.g. after a daemon-reload): restart the container; check the host's nvidia-smi."
        )
    else:
        summary = f"nvidia-smi failed (exit {rc})"
        advice = "Read its output; check the host's kernel messages for an Xid."
    if first and kind not in ("gpu-timeout", "gpu-stuck", "tmp-unwritable"):
        summary += f": {first[:200]}"
    if what == "compute-apps" and kind not in ("gpu-stuck", "gpu-timeout"):
        sev = Severity.WARNING
        summary = "process list unavailable — " + summary
    return Finding(layer=layer, kind=kind, summary=summary, advice=advice, severity=sev, subject=subj)


def _value_findings(gpus: list[GPU]) -> list[Finding]:
    out = []
    for g in gpus:
        reasons = set(g.na_reasons().values())
        bad = [r for r in reasons if r in ("[GPU is lost]", "[Unknown Error]")]
        if bad:
            lost = "[GPU is lost]" in bad
            out.append(
                Finding(
                    layer=Layer.GPU,
                    kind="gpu-lost" if lost else "gpu-value-error",
                    summary=f"GPU {g.index} ({g.bus_id}) reports {', '.join(sorted(bad))}",
                    advice="Check the host's kernel messages for an Xid; a lost GPU needs a host reboot."
                    if lost
                    else "Check the host's kernel messages for an Xid.",
                    severity=Severity.ERROR if lost else Severity.WARNING,
                    subject={"index": _jsonable(g.index), "bus_id": _jsonable(g.bus_id), "uuid": _jsonable(g.uuid)},
                )
            )
    return out


def parse_gpu_output(
    stdout: str | bytes | None,
    stderr: str | bytes | None = "",
    exit_code: int | None = 0,
    *,
    collected_at: float | None = None,
    timeout_s: float | None = None,
) -> GPUSnapshot:
    """Parse :func:`gpu_query_command`'s output (or a bare ``--query-gpu`` output); never raises."""
    snap = GPUSnapshot(collected_at=time.time() if collected_at is None else collected_at)
    try:
        _parse_into(snap, _to_text(stdout), _to_text(stderr), exit_code, timeout_s)
    except Exception as exc:  # pragma: no cover - defensive
        snap.findings.append(
            Finding(Layer.GPU, "parse-error", f"could not read nvidia-smi output: {exc!r}", severity=Severity.WARNING)
        )
    errors = [f for f in snap.findings if f.severity is Severity.ERROR]
    snap.error = errors[0].summary if errors else None
    return snap


def _parse_into(snap: GPUSnapshot, out: str, err: str, exit_code: int | None, timeout_s: float | None) -> None:
    sections: dict[str, list[str]] = {}
    results: dict[str, tuple[int, str | None]] = {}
    current: str | None = None
    framed = False
    loose: list[str] = []
    for line in out.splitlines():
        m = _FRAME.match(line)
        if m:
            framed = True
            if m.group("rc") is not None:
                if current is not None:
                    results[current] = (int(m.group("rc")), m.group("flag"))
                current = None
            else:
                current = m.group("what")
                sections.setdefault(current, [])
            continue
        if current is not None:
            sections[current].append(line)
        else:
            loose.append(line)
    if not framed:
        # a bare query: stdout holds the rows, exit_code is nvidia-smi's
        sections["query-gpu"] = loose + err.splitlines()
        results["query-gpu"] = (exit_code if exit_code is not None else 0, None)
        loose = []
    else:
        if "query-gpu" in sections and "query-gpu" not in results:
            # frame opened but never closed: the shell died or the output was cut
            results["query-gpu"] = (exit_code if exit_code not in (None, 0) else 255, "cut")
        if "compute-apps" in sections and "compute-apps" not in results:
            results["compute-apps"] = (exit_code if exit_code not in (None, 0) else 255, "cut")

    # GPUs
    gpu_lines = sections.get("query-gpu", [])
    for line in gpu_lines:
        if not line.strip():
            continue
        g = _row(line, GPU_FIELDS, 1, GPU)
        if g is None:
            snap.unparsed.append(line[:500])
        else:
            snap.gpus.append(g)
    # processes
    by_uuid = {g.uuid: g.index for g in snap.gpus if not is_na(g.uuid)}
    for line in sections.get("compute-apps", []):
        if not line.strip():
            continue
        p = _row(line, APP_FIELDS, 1, GPUProcess)
        if p is None:
            snap.unparsed.append(line[:500])
        else:
            p.gpu_index = by_uuid.get(p.gpu_uuid, NaType("[N/A]"))
            snap.processes.append(p)

    for what in ("query-gpu", "compute-apps"):
        if what not in results:
            continue
        rc, flag = results[what]
        snap.exit_codes[what] = rc
        if rc != 0 or flag:
            text = "\n".join(sections.get(what, []))
            if what == "query-gpu" and not framed:
                text = "\n".join(ln for ln in text.splitlines() if ln in snap.unparsed)
            elif snap.gpus or snap.processes:
                text = "\n".join(ln for ln in text.splitlines() if ln[:500] in snap.unparsed)
            if flag == "cut":
                snap.findings.append(
                    Finding(
                        Layer.GPU,
                        "probe-cut",
                        f"the GPU probe's output ended inside the {what} query (exit {exit_code})",
                        advice="The shell running the probe died or was cut off; see the transport's error.",
                        severity=Severity.WARNING,
                        subject={"query": what, "exit_code": exit_code, "stderr": err[-2000:]},
                    )
                )
            else:
                snap.findings.append(_diagnose(rc, flag, text or err, what, timeout_s))
    if not results and not snap.gpus:
        snap.findings.append(
            Finding(
                Layer.GPU,
                "probe-failed",
                "the GPU probe printed nothing readable" + (f" (exit {exit_code})" if exit_code else ""),
                advice="See the transport's error and the probe's stderr.",
                severity=Severity.ERROR,
                subject={"exit_code": exit_code, "stdout": out[-2000:], "stderr": err[-2000:]},
            )
        )
    if snap.unparsed and "query-gpu" in results and results["query-gpu"][0] == 0:
        snap.findings.append(
            Finding(
                Layer.GPU,
                "unparsed-output",
                f"{len(snap.unparsed)} line(s) of nvidia-smi output were not data: {snap.unparsed[0][:160]}",
                severity=Severity.WARNING,
                subject={"lines": snap.unparsed[:20]},
            )
        )
    snap.findings.extend(_value_findings(snap.gpus))


# --------------------------------------------------------------------------------------------
# memory held by processes that are gone


def unaccounted_memory(
    snapshot: GPUSnapshot,
    live_host_pids: set[int] | Iterable[int] | None,
    zombie_pids: Iterable[int] = (),
    *,
    min_mib: int = 1,
    unlisted_threshold_mib: int = 2048,
) -> list[Finding]:
    """GPU memory that no live process accounts for.

    GPU pids are the driver's (the host's PID namespace), so ``live_host_pids`` and ``zombie_pids``
    must be host pids too (``ps`` run on the host); ``live_host_pids=None`` means "unknown" and
    only zombies are checked.  Zombie pids count as dead even if they are in ``live_host_pids``.

    Findings: ``gpu-memory-zombie`` / ``gpu-memory-dead-pid`` (error) per process, and
    ``gpu-memory-unlisted`` (info) per GPU whose used memory exceeds the listed processes' by more
    than ``unlisted_threshold_mib`` (processes in another PID namespace are not listed).
    """
    zombies = {int(z) for z in zombie_pids}
    live = None if live_host_pids is None else {int(p) for p in live_host_pids}
    out: list[Finding] = []
    for p in snapshot.processes:
        if is_na(p.pid):
            continue
        mem = p.used_memory_mib
        if not is_na(mem) and mem < min_mib:
            continue
        mem_txt = f"{mem} MiB" if not is_na(mem) else "memory"
        who = f"pid {p.pid}" + (f", {p.process_name}" if not is_na(p.process_name) else "")
        where = f"GPU {p.gpu_index}" if not is_na(p.gpu_index) else f"GPU {p.gpu_uuid}"
        subject = {
            "pid": p.pid,
            "process_name": _jsonable(p.process_name),
            "used_memory_mib": _jsonable(mem),
            "gpu_uuid": _jsonable(p.gpu_uuid),
            "gpu_index": _jsonable(p.gpu_index),
        }
        if p.pid in zombies:
            out.append(
                Finding(
                    Layer.GPU,
                    "gpu-memory-zombie",
                    f"{where}: {mem_txt} held by a zombie ({who})",
                    advice="The driver frees it only when every thread of the process is gone; a Zl zombie's "
                    "threads are stuck in the kernel: reboot the container, and if the memory stays, reset the "
                    "GPU or reboot the host.",
                    severity=Severity.ERROR,
                    subject=subject,
                )
            )
        elif live is not None and p.pid not in live:
            out.append(
                Finding(
                    Layer.GPU,
                    "gpu-memory-dead-pid",
                    f"{where}: {mem_txt} held by a dead process ({who})",
                    advice="No live process has this pid: the driver still holds its memory (a process stuck in "
                    "teardown). On the host: `fuser -v /dev/nvidia*`; a GPU reset or host reboot frees it.",
                    severity=Severity.ERROR,
                    subject=subject,
                )
            )
    for g in snapshot.gpus:
        if is_na(g.memory_used_mib) or is_na(g.uuid):
            continue
        listed = [p for p in snapshot.processes if p.gpu_uuid == g.uuid]
        listed_mib = sum(p.used_memory_mib for p in listed if not is_na(p.used_memory_mib))
        if any(is_na(p.used_memory_mib) for p in listed):
            continue  # MIG / containers: per-process memory unknown
        gap = g.memory_used_mib - listed_mib
        if gap > unlisted_threshold_mib:
            out.append(
                Finding(
                    Layer.GPU,
                    "gpu-memory-unlisted",
                    f"GPU {g.index}: {gap} MiB in use that no listed process accounts for",
                    advice="Processes in another container or PID namespace are not listed; if none should be "
                    "there, check the host's nvidia-smi for a leftover process.",
                    severity=Severity.INFO,
                    subject={"index": _jsonable(g.index), "uuid": g.uuid, "unaccounted_mib": gap},
                )
            )
    return out
