"""What a failed nvidia-smi query or an odd GPU value means, as :class:`~cockpit.core.layers.Finding`.

:func:`diagnose` reads one query's exit status, frame flag (``stuck``, ``timeout``, ``notmp``) and
output, and names the failure: layer ``gpu``, or ``container`` when the binary is missing from the
container or the container cannot write a temp file.  :func:`value_findings` reports GPUs whose
values say ``[GPU is lost]`` or ``[Unknown Error]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...layers import Finding, Layer, Severity
from .model import GPU, jsonable

__all__ = ["diagnose", "value_findings", "UNKNOWN_FIELD"]

#: output texts → failure kind, first match wins (nvidia-smi's messages are more precise than its exit codes)
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

#: nvidia-smi's (and the shell's) exit codes → failure kind, when no output text matched
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


@dataclass(frozen=True)
class _Text:
    summary: str
    advice: str
    layer: Layer = Layer.GPU
    severity: Severity = Severity.ERROR


_TEXTS: dict[str, _Text] = {
    "gpu-stuck": _Text(
        "nvidia-smi hung and ignores SIGKILL: it is stuck in the NVIDIA driver",
        "The driver is wedged: check the host's kernel messages for an Xid (79: fallen off the bus); "
        "jobs using this GPU will hang too. Reset the GPU (nvidia-smi -r, all its processes stopped) "
        "or reboot the host.",
    ),
    "gpu-timeout": _Text(
        "nvidia-smi timed out",
        "A hung nvidia-smi usually means the driver waits on a hung GPU: check the host's kernel messages "
        "for an Xid. Without persistence mode every call re-initialises the GPUs (slow with many): "
        "`nvidia-smi -pm 1` on the host. If it keeps hanging, reset the GPU or reboot the host.",
    ),
    "tmp-unwritable": _Text(
        "the GPU probe could not create a temp file in the container (disk full?)",
        "Check `df -h /tmp` inside the container and free space.",
        Layer.CONTAINER,
    ),
    "not-found": _Text(
        "nvidia-smi is not installed or not mounted in the container",
        "The NVIDIA userspace is not visible here: bind-mount the host's nvidia-smi and libnvidia-ml.so "
        "into the container (lxc.mount.entry) or install the same driver version's utilities without "
        "the kernel module; or set the nvidia-smi path in the config (PATH is minimal under pct exec).",
        Layer.CONTAINER,
    ),
    "not-executable": _Text(
        "nvidia-smi exists in the container but cannot be executed",
        "Check the binary's permissions and that its mount is not noexec.",
        Layer.CONTAINER,
    ),
    "nvml-mismatch": _Text(
        "NVML driver/library version mismatch",
        "The loaded kernel module and the userspace libraries differ (driver upgraded without a reboot, or "
        "the container's libnvidia-ml is another version): reboot the host, or make the container's "
        "libraries match /proc/driver/nvidia/version on the host.",
    ),
    "driver-not-loaded": _Text(
        "nvidia-smi cannot talk to the NVIDIA driver",
        "On the host: is the module loaded (`lsmod | grep nvidia`, `nvidia-smi`)? In the container: are "
        "/dev/nvidia* present and allowed (lxc.cgroup2.devices.allow: c 195:* rwm, mount entries)?",
    ),
    "nvml-missing": _Text(
        "libnvidia-ml.so (NVML) not found",
        "The driver's userspace library is not installed or not mounted in the container: mount the "
        "host's libnvidia-ml.so.1 (same version as the host's module) and run ldconfig.",
    ),
    "gpu-lost": _Text(
        "a GPU is lost (fallen off the bus?)",
        "Check the host's kernel messages for Xid 79; the GPU needs a host reboot (a reset rarely helps). "
        "If it recurs, check power, cooling and PCIe seating.",
    ),
    "no-devices": _Text(
        "nvidia-smi found no GPU",
        "The container has no /dev/nvidiaN device nodes (or the host lost its GPUs): check the container's "
        "device entries and `nvidia-smi` on the host.",
    ),
    "query-unsupported": _Text(
        "this nvidia-smi does not know a queried field",
        "The driver is older than cockpit expects (470+): update it, or report the field.",
        severity=Severity.WARNING,
    ),
    "permissions": _Text(
        "nvidia-smi: insufficient permissions",
        "The user cannot open /dev/nvidia*: check the device nodes' permissions and cgroup device rules.",
    ),
    "nvml-unknown": _Text(
        "NVML failed to initialise (Unknown Error)",
        "In containers this usually means device access was revoked (cgroup device rules reset on the host, "
        "e.g. after a daemon-reload): restart the container; check the host's nvidia-smi.",
    ),
}

#: nvidia-smi's refusal of a field it does not know (on stdout, exit 2): the field is group 1
UNKNOWN_FIELD = re.compile(r'Field "([^"\n]{1,200})" is not a valid field to query')

_LOST_BUS = re.compile(r"(?:handle for GPU\s*|GPU )([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)")


def _kind(rc: int, flag: str | None, body: str) -> str:
    if flag == "stuck":
        return "gpu-stuck"
    if flag == "timeout" or rc in (124, 137):
        return "gpu-timeout"
    if flag == "notmp" or rc == 200:
        return "tmp-unwritable"
    for pat, k in _ERR_PATTERNS:
        if pat.search(body):
            return k
    return _EXIT_KIND.get(rc, "nvidia-smi-failed")


def diagnose(rc: int, flag: str | None, text: str, what: str, timeout_s: float | None) -> Finding:
    """The finding for one failed query (``what``: ``query-gpu`` or ``compute-apps``)."""
    body = text.strip()
    first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
    kind = _kind(rc, flag, body)
    subj: dict[str, Any] = {"exit_code": rc, "query": what, "output": body[-2000:]}
    t = _TEXTS.get(kind) or _Text(f"nvidia-smi failed (exit {rc})", "Read its output; check the host's kernel messages for an Xid.")
    summary, sev = t.summary, t.severity
    if kind == "gpu-timeout" and timeout_s:
        summary = f"nvidia-smi did not answer within {timeout_s:g}s"
    elif kind == "gpu-lost":
        m = _LOST_BUS.search(body)
        if m:
            summary = f"GPU {m.group(1)} is lost (fallen off the bus?)"
            subj["bus_id"] = m.group(1)
    elif kind == "query-unsupported":
        m = UNKNOWN_FIELD.search(body)
        if m:
            subj["field"] = m.group(1)
    if first and kind not in ("gpu-timeout", "gpu-stuck", "tmp-unwritable"):
        summary += f": {first[:200]}"
    if what == "compute-apps" and kind not in ("gpu-stuck", "gpu-timeout"):
        sev = Severity.WARNING
        summary = "process list unavailable — " + summary
    return Finding(layer=t.layer, kind=kind, summary=summary, advice=t.advice, severity=sev, subject=subj)


def value_findings(gpus: list[GPU]) -> list[Finding]:
    """GPUs whose values say the GPU is lost or in error."""
    out: list[Finding] = []
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
                    subject={"index": jsonable(g.index), "bus_id": jsonable(g.bus_id), "uuid": jsonable(g.uuid)},
                )
            )
    return out
