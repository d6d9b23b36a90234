"""The demo's simulated ``nvidia-smi``: one NVIDIA A100-SXM4-80GB that works while the job trains.

:func:`cockpit.demo.demo_config` copies this file to ``<demo home>/bin/nvidia-smi`` as an
executable script (stdlib only, it never imports cockpit), and points ``[gpu] nvidia_smi`` at it.
The load comes from the JSON state file the demo job writes (``$COCKPIT_DEMO_GPU_STATE``; by
default ``<this script's dir>/../run/gpu.json``)::

    {"pid": 4242, "start_time": 123456, "process_name": "/usr/bin/python3", "phase": "training",
     "utilization_gpu": 95, "memory_used_mib": 62208, "updated": 1733130000.0}

Like a real GPU, the load lasts only as long as that process: when the pid is gone (or is now
another process, or a zombie) the GPU is idle again and no compute app is listed.  A job that stops
updating the file (hung, or stopped with SIGSTOP) keeps its memory but shows 0 % utilisation.

Supported, in the formats of driver 550:
    nvidia-smi --query-gpu=F1,F2,… --format=csv[,noheader][,nounits] [-i N]
    nvidia-smi --query-compute-apps=F1,… --format=csv[,noheader][,nounits]
    nvidia-smi -L
    nvidia-smi            (a short version of the usual table)
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.realpath(__file__))
DEFAULT_STATE = os.path.join(os.path.dirname(HERE), "run", "gpu.json")
#: seconds without an update after which a job counts as stalled (memory held, no kernels)
STALL_S = 5.0

DRIVER = "550.54.15"
CUDA = "12.4"
#: one value per query field (str, int or float, as nvidia-smi prints them)
GPU: dict[str, Any] = {
    "index": 0,
    "name": "NVIDIA A100-SXM4-80GB",
    "uuid": "GPU-3f5c2a7e-9b41-4d2e-8c6f-1a2b3c4d5e6f",
    "serial": "1564720012345",
    "pci.bus_id": "00000000:07:00.0",
    "driver_version": DRIVER,
    "vbios_version": "92.00.36.00.02",
    "pstate": "P0",
    "persistence_mode": "Enabled",
    "compute_mode": "Default",
    "compute_cap": "8.0",
    "memory.total": 81920,
    "memory.reserved": 0,
    "power.limit": 400.0,
    "power.default_limit": 400.0,
    "power.max_limit": 400.0,
    "enforced.power.limit": 400.0,
    "fan.speed": "[N/A]",
    "mig.mode.current": "Disabled",
    "ecc.errors.uncorrected.volatile.total": 0,
    "ecc.errors.corrected.volatile.total": 0,
    "clocks.max.sm": 1410,
    "clocks.max.mem": 1593,
    "clocks.mem": 1593,
    "pcie.link.gen.current": 4,
    "pcie.link.width.current": 16,
    "display_active": "Disabled",
}

#: --query-gpu fields → unit ("" for none)
GPU_FIELDS = {
    "timestamp": "", "driver_version": "", "count": "", "index": "", "name": "", "serial": "", "uuid": "",
    "pci.bus_id": "", "vbios_version": "", "pstate": "", "persistence_mode": "", "compute_mode": "",
    "compute_cap": "", "display_active": "", "mig.mode.current": "",
    "utilization.gpu": "%", "utilization.memory": "%",
    "memory.total": "MiB", "memory.used": "MiB", "memory.free": "MiB", "memory.reserved": "MiB",
    "temperature.gpu": "", "temperature.memory": "",
    "power.draw": "W", "power.draw.average": "W", "power.draw.instant": "W", "power.limit": "W",
    "power.default_limit": "W", "power.max_limit": "W", "enforced.power.limit": "W",
    "fan.speed": "%", "clocks.sm": "MHz", "clocks.mem": "MHz", "clocks.gr": "MHz",
    "clocks.max.sm": "MHz", "clocks.max.mem": "MHz",
    "ecc.errors.uncorrected.volatile.total": "", "ecc.errors.corrected.volatile.total": "",
    "pcie.link.gen.current": "", "pcie.link.width.current": "",
}
GPU_ALIASES = {
    "gpu_name": "name", "gpu_serial": "serial", "gpu_uuid": "uuid", "gpu_bus_id": "pci.bus_id",
    "clocks.current.sm": "clocks.sm", "clocks.current.memory": "clocks.mem", "clocks.memory": "clocks.mem",
    "clocks.current.graphics": "clocks.gr", "clocks.graphics": "clocks.gr", "clocks.max.memory": "clocks.max.mem",
}
FLOAT_FIELDS = {"power.draw", "power.draw.average", "power.draw.instant", "power.limit", "power.default_limit",
                "power.max_limit", "enforced.power.limit"}

APP_FIELDS = {"timestamp": "", "gpu_name": "", "gpu_bus_id": "", "gpu_serial": "", "gpu_uuid": "",
              "pid": "", "process_name": "", "used_gpu_memory": "MiB"}
APP_ALIASES = {"name": "process_name", "used_memory": "used_gpu_memory"}
SPECIAL = ("[N/A]", "[Not Supported]", "[Insufficient Permissions]")


# -- the job behind the load ---------------------------------------------------------------------

def _alive(pid: int, start_time: object) -> bool:
    """Is ``pid`` a live (not zombie) process, and the same one that wrote the state?"""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        if not os.path.isdir("/proc/self"):  # no procfs (macOS): ask the kernel
            try:
                os.kill(pid, 0)
                return True
            except PermissionError:
                return True
            except OSError:
                return False
        return False
    if fields[0] in ("Z", "X"):
        return False
    if isinstance(start_time, int) and fields[19].isdigit() and int(fields[19]) != start_time:
        return False  # the pid now belongs to another process
    return True


def load_job(path: str) -> dict[str, Any] | None:
    """The job's state when a live job owns the GPU, else None."""
    try:
        with open(path) as fh:
            state = json.load(fh)
        pid = int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(state, dict) or pid <= 0 or not _alive(pid, state.get("start_time")):
        return None
    state["pid"] = pid
    return state


def gpu_values(job: dict[str, Any] | None, now: float) -> dict[str, Any]:
    g = dict(GPU)
    wobble = math.sin(now * 1.7) + 0.5 * math.sin(now * 4.3)  # -1.5 … 1.5, smooth
    util = mem = 0
    if job is not None:
        mem = int(job.get("memory_used_mib") or 0)
        stalled = now - float(job.get("updated") or 0) > STALL_S
        util = 0 if stalled else int(job.get("utilization_gpu") or 0)
        if util >= 10:
            util = max(0, min(100, util + round(2 * wobble)))
    busy = util / 100.0
    g.update({
        "utilization.gpu": util,
        "utilization.memory": int(round(util * 0.42)),
        "memory.used": mem,
        "memory.free": g["memory.total"] - mem - g["memory.reserved"],
        "temperature.gpu": int(round(32 + 34 * busy + (wobble if busy else 0))),
        "temperature.memory": int(round(38 + 30 * busy)),
        "power.draw": round(61.5 + 300 * busy + (9 * wobble if busy else 0.3 * wobble), 2),
        "clocks.sm": 1410 if busy else 210,
        "clocks.gr": 1410 if busy else 210,
    })
    g["power.draw.average"] = g["power.draw.instant"] = g["power.draw"]
    return g


# -- output --------------------------------------------------------------------------------------

def fmt(field: str, value: object, unit: str, units: bool) -> str:
    if isinstance(value, str) and value in SPECIAL:
        return value
    if value is None:
        return "[N/A]"
    if field in FLOAT_FIELDS and isinstance(value, (int, float)):
        value = f"{value:.2f}"
    return f"{value} {unit}" if unit and units else str(value)


def invalid_args() -> int:
    sys.stdout.write("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n")
    return 2


def parse_format(spec: str | None) -> tuple[bool, bool] | None:
    parts = [p.strip() for p in (spec or "").split(",") if p.strip()]
    if "csv" not in parts or any(p not in ("csv", "noheader", "nounits") for p in parts):
        return None
    return "noheader" not in parts, "nounits" not in parts


def query(fields_spec: str, fmt_spec: str | None, table: str, job: dict[str, Any] | None, now: float, selected: set[str] | None) -> int:
    opts = parse_format(fmt_spec)
    if opts is None:
        return invalid_args()
    header, units = opts
    known, aliases = (GPU_FIELDS, GPU_ALIASES) if table == "gpu" else (APP_FIELDS, APP_ALIASES)
    fields = []
    for raw in fields_spec.split(","):
        name = raw.strip()
        if not name:
            continue
        canon = aliases.get(name.lower(), name.lower())
        if canon not in known:
            sys.stdout.write(f'Field "{name}" is not a valid field to query.\n\n')
            return 2
        fields.append(canon)
    if not fields:
        return invalid_args()
    if selected is not None and not selected <= {"0", GPU["uuid"], GPU["pci.bus_id"]}:
        sys.stdout.write("No devices were found\n")
        return 6
    g = gpu_values(job, now)
    stamp = time.strftime("%Y/%m/%d %H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
    out = []
    if header:
        out.append(", ".join(f"{f} [{known[f]}]" if known[f] else f for f in fields))
    if table == "gpu":
        row = []
        for f in fields:
            v = stamp if f == "timestamp" else 1 if f == "count" else g.get(f, "[N/A]")
            row.append(fmt(f, v, known[f], units))
        out.append(", ".join(row))
    elif job is not None:
        app = {"timestamp": stamp, "gpu_name": g["name"], "gpu_bus_id": g["pci.bus_id"], "gpu_serial": g["serial"],
               "gpu_uuid": g["uuid"], "pid": job["pid"], "process_name": job.get("process_name") or "python3",
               "used_gpu_memory": g["memory.used"]}
        out.append(", ".join(fmt(f, app[f], known[f], units) for f in fields))
    if out:
        sys.stdout.write("\n".join(out) + "\n")
    return 0


def list_gpus() -> int:
    sys.stdout.write(f"GPU {GPU['index']}: {GPU['name']} (UUID: {GPU['uuid']})\n")
    return 0


def show_table(job: dict[str, Any] | None, now: float) -> int:
    """The usual screen, in driver 550's layout."""
    g = gpu_values(job, now)
    w = sys.stdout.write

    def full(text: str) -> None:
        w(f"|{text:<89.89}|\n")

    def row(a: str, b: str, c: str) -> None:
        w(f"|{a:<41.41}|{b:>24.24}|{c:>22.22}|\n")

    line = "+" + "-" * 89 + "+\n"
    rule = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+\n"
    w(time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)) + "\n" + line)
    full(f" NVIDIA-SMI {DRIVER:<22} Driver Version: {DRIVER:<14} CUDA Version: {CUDA:<9}")
    w("|" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+\n")
    row(" GPU  Name                 Persistence-M ", " Bus-Id          Disp.A ", " Volatile Uncorr. ECC ")
    row(" Fan  Temp   Perf          Pwr:Usage/Cap ", "           Memory-Usage ", " GPU-Util  Compute M. ")
    row("", "", "               MIG M. ")
    w("|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|\n")
    name = f" {g['index']:>3}  {g['name']}"
    row(f"{name:<37}On  ", f"   {g['pci.bus_id']} Off ", f"{g['ecc.errors.uncorrected.volatile.total']:>20} ")
    pwr = f"{g['power.draw']:.0f}W / {g['power.limit']:>4.0f}W"
    row(f" N/A   {g['temperature.gpu']:>2}C    {g['pstate']:<3} {pwr:>22} ",
        f" {g['memory.used']:>7}MiB / {g['memory.total']:>6}MiB ", f" {g['utilization.gpu']:>6}%      Default ")
    row("", "", f"{g['mig.mode.current']:>20} ")
    w(rule + "\n" + line)
    full(" Processes:")
    full("  GPU   GI   CI        PID   Type   Process name                              GPU Memory")
    full("        ID   ID                                                               Usage")
    w("|" + "=" * 89 + "|\n")
    if job is not None:
        name = str(job.get("process_name") or "python3")
        if len(name) > 38:
            name = "..." + name[-35:]
        full(f"    0   N/A  N/A  {job['pid']:>9}      C   {name:<38} {str(g['memory.used']) + 'MiB':>12}")
    else:
        full("  No running processes found")
    w(line)
    return 0


def main(argv: list[str]) -> int:
    state_path = os.environ.get("COCKPIT_DEMO_GPU_STATE") or DEFAULT_STATE
    q_gpu = q_app = fmt_spec = None
    selected: set[str] | None = None
    listing = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--query-gpu="):
            q_gpu = a.split("=", 1)[1]
        elif a.startswith("--query-compute-apps="):
            q_app = a.split("=", 1)[1]
        elif a.startswith("--format="):
            fmt_spec = a.split("=", 1)[1]
        elif a.startswith("--id="):
            selected = set(a.split("=", 1)[1].split(","))
        elif a in ("--query-gpu", "--query-compute-apps", "--format", "-i", "--id") and i + 1 < len(argv):
            i += 1
            if a == "--query-gpu":
                q_gpu = argv[i]
            elif a == "--query-compute-apps":
                q_app = argv[i]
            elif a == "--format":
                fmt_spec = argv[i]
            else:
                selected = set(argv[i].split(","))
        elif a in ("-L", "--list-gpus"):
            listing = True
        elif a in ("-h", "--help"):
            sys.stdout.write(__doc__ or "")
            return 0
        else:
            return invalid_args()
        i += 1
    if (q_gpu is not None) + (q_app is not None) + listing > 1:
        return invalid_args()
    now = time.time()
    if q_gpu is not None:
        return query(q_gpu, fmt_spec, "gpu", load_job(state_path), now, selected)
    if q_app is not None:
        return query(q_app, fmt_spec, "app", load_job(state_path), now, selected)
    if fmt_spec is not None:
        return invalid_args()
    if listing:
        return list_gpus()
    return show_table(load_job(state_path), now)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
