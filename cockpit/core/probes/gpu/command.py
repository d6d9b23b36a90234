"""The GPU probe: which nvidia-smi fields are asked for, and the ``sh`` command that asks.

:func:`gpu_query_command` runs both queries (``--query-gpu`` and ``--query-compute-apps``,
``--format=csv,noheader,nounits``) in one shell command and frames each query's output with its
exit status; each frame's first line names the fields asked for, in column order, and each line of
nvidia-smi's output is prefixed ``| `` (``@@cockpit-gpu v2`` says so), so a process name holding a
newline and a frame line cannot forge a frame::

    @@cockpit-gpu v2
    @@cockpit-gpu query-gpu index,name,uuid,…
    | 0, NVIDIA H100 80GB HBM3, GPU-5f2c…, …
    @@cockpit-gpu rc 0
    @@cockpit-gpu compute-apps pid,process_name,used_memory,gpu_uuid
    | 48213, /usr/bin/python3, 71234, GPU-5f2c…
    @@cockpit-gpu rc 0

The pids the driver lists are host pids; with ``describe`` their ``/proc`` entries follow
(:mod:`.procmap`), so one round trip says which container each one belongs to.

Older drivers reject a field they do not know, and the whole query with it (``Field
"mig.mode.current" is not a valid field to query.``, exit 2).  Every field says whether every
driver has it (:attr:`GpuField.core`); :mod:`.fallback` asks again without the others.

nvidia-smi writes its own failures (``NVIDIA-SMI has failed …``) to stdout, so both streams are
captured together inside the frame.  The process list is only asked for when the GPU query worked.

A hung nvidia-smi is the normal symptom of a wedged driver, and a process stuck in the driver
ignores even SIGKILL, so ``timeout`` (which waits for its child after killing it) would hang with
it.  Instead each query runs in the background with its output in a temp file, and the shell polls
``/proc/PID/stat`` (no fork per poll).  Past the deadline it sends SIGKILL; a query that is still
there after that is reported ``stuck`` and abandoned, so the probe always returns.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from .mark import MARK
from .procmap import describe_section, fdscan_command

__all__ = ["MARK", "GpuField", "GPU_FIELDS", "APP_FIELDS", "FIELD_TABLES", "gpu_query_command", "core_fields"]


@dataclass(frozen=True)
class GpuField:
    """One column of a query: the :class:`GPU`/:class:`GPUProcess` attribute, the exact nvidia-smi
    field, its type, and what it means.

    ``core``: every driver that has ``--query-gpu`` knows the field (the fallback set when a
    driver rejects one); ``free_text``: its value may contain ", " (at most one such column).
    """

    attr: str
    query: str
    kind: type
    doc: str
    core: bool = True
    free_text: bool = False


#: ``--query-gpu`` columns, in order.  Every field is valid on drivers 470 … 570; the ``core`` ones
#: on every driver with ``--query-gpu``.
GPU_FIELDS: tuple[GpuField, ...] = (
    GpuField("index", "index", int, "Zero-based index of the GPU, as nvidia-smi numbers them."),
    GpuField("name", "name", str, "Product name, e.g. 'NVIDIA H100 80GB HBM3'.", free_text=True),
    GpuField("uuid", "uuid", str, "Globally unique id 'GPU-…'; compute apps refer to it."),
    GpuField("bus_id", "pci.bus_id", str, "PCI bus id 'domain:bus:device.function' (Xid lines name it)."),
    GpuField("driver_version", "driver_version", str, "Installed NVIDIA driver version.", core=False),
    GpuField("pstate", "pstate", str, "Performance state, P0 (max) … P12 (min).", core=False),
    GpuField("temperature_c", "temperature.gpu", int, "Core GPU temperature, degrees C."),
    GpuField("utilization_pct", "utilization.gpu", int, "Percent of time a kernel ran over the last sample period."),
    GpuField("memory_utilization_pct", "utilization.memory", int, "Percent of time device memory was read or written.", core=False),
    GpuField("memory_used_mib", "memory.used", int, "Device memory allocated by active contexts, MiB."),
    GpuField("memory_total_mib", "memory.total", int, "Total installed device memory, MiB."),
    GpuField("power_draw_w", "power.draw", float, "Board power draw, W ([N/A] on some boards and vGPUs)."),
    GpuField("power_limit_w", "power.limit", float, "Software power limit, W.", core=False),
    GpuField("fan_pct", "fan.speed", int, "Fan speed as percent of maximum ([N/A] on passively cooled boards).", core=False),
    GpuField("mig_mode", "mig.mode.current", str, "MIG mode: Enabled, Disabled, or [N/A] where unsupported (drivers before R450 reject it).", core=False),
    GpuField(
        "ecc_uncorrected",
        "ecc.errors.uncorrected.volatile.total",
        int,
        "Uncorrected ECC errors since the driver loaded ([N/A] without ECC).",
        core=False,
    ),
)

#: ``--query-compute-apps`` columns, in order (``process_name`` may contain ", ").
APP_FIELDS: tuple[GpuField, ...] = (
    GpuField("pid", "pid", int, "Process id, in the PID namespace the driver reports (the host's)."),
    GpuField("process_name", "process_name", str, "Process name (path of the executable).", free_text=True),
    GpuField("used_memory_mib", "used_memory", int, "Device memory the context uses, MiB ([N/A] under MIG)."),
    GpuField("gpu_uuid", "gpu_uuid", str, "The GPU this context lives on."),
)

#: query name (the frame's name) → its columns
FIELD_TABLES: dict[str, tuple[GpuField, ...]] = {"query-gpu": GPU_FIELDS, "compute-apps": APP_FIELDS}



def core_fields(table: tuple[GpuField, ...]) -> tuple[GpuField, ...]:
    """The columns of ``table`` that every driver knows, in order."""
    return tuple(f for f in table if f.core)


def _poll_schedule(timeout: float) -> str:
    """Sleeps that add up to ``timeout``: 5 ms doubling to 0.1 s, then 0.1 s steps."""
    out: list[str] = []
    total, step = 0.0, 0.005
    while total < timeout:
        out.append(f"{step:g}")
        total += step
        step = min(0.1, step * 2)
    return " ".join(out)



#: at most this many of the listed pids are described (``/proc``) per refresh
MAX_DESCRIBED = 64


def query_prelude(timeout: float) -> str:
    """The shell functions every GPU probe command starts with.

    ``_cg_q CMD…`` runs one query under the deadline and prints its output framed: each line as
    ``| LINE`` (so no text a process chose, a process name say, can pass for a frame line), then
    ``@@cockpit-gpu rc N [flag]``.  With ``_cg_keep`` set, the first column of each output line
    that is a number (a pid) is collected into ``$_cg_pids`` (at most :data:`MAX_DESCRIBED`).
    """
    timeout = max(0.1, float(timeout))
    fast = _poll_schedule(timeout)
    slow = " ".join(["1"] * max(1, int(math.ceil(timeout))))
    return (
        # poll the query often at first (a healthy nvidia-smi answers in tens of ms), then every
        # 0.1 s until the deadline; where sleep takes whole seconds only, once a second
        f"_cg_w='{fast}'; sleep 0.001 2>/dev/null || _cg_w='{slow}'; _cg_pids=; _cg_keep=; "
        "_cg_alive() { _cg_st=; read -r _cg_st 2>/dev/null </proc/$1/stat || return 1; "
        "case $_cg_st in *') Z '*|*') X '*) return 1;; esac; return 0; }; "
        "_cg_cat() { while IFS= read -r _cg_l || [ -n \"$_cg_l\" ]; do printf '| %s\\n' \"$_cg_l\"; done <\"$1\"; }; "
        "_cg_collect() { _cg_n=0; while IFS=, read -r _cg_p _cg_x; do _cg_p=${_cg_p# }; "
        "case $_cg_p in ''|*[!0-9]*) continue;; esac; case \" $_cg_pids \" in *\" $_cg_p \"*) continue;; esac; "
        f"_cg_pids=\"$_cg_pids $_cg_p\"; _cg_n=$((_cg_n + 1)); [ $_cg_n -ge {MAX_DESCRIBED} ] && break; done <\"$1\"; }}; "
        "_cg_q() { _cg_f=$(mktemp 2>/dev/null) || _cg_f=${TMPDIR:-/tmp}/.cockpit-gpu.$$; "
        f"if ! : >\"$_cg_f\" 2>/dev/null; then echo '{MARK} rc 200 notmp'; return 200; fi; "
        "\"$@\" >\"$_cg_f\" 2>&1 & _cg_p=$!; "
        "for _cg_s in $_cg_w; do _cg_alive $_cg_p || break; sleep $_cg_s; done; "
        "if _cg_alive $_cg_p; then kill -9 $_cg_p 2>/dev/null; sleep 0.1 2>/dev/null || sleep 1; "
        f"if _cg_alive $_cg_p; then _cg_cat \"$_cg_f\"; rm -f \"$_cg_f\"; echo '{MARK} rc 124 stuck'; return 124; fi; "
        f"wait $_cg_p; _cg_cat \"$_cg_f\"; rm -f \"$_cg_f\"; echo '{MARK} rc 124 timeout'; return 124; fi; "
        "wait $_cg_p; _cg_r=$?; _cg_cat \"$_cg_f\"; [ -n \"$_cg_keep\" ] && [ $_cg_r = 0 ] && _cg_collect \"$_cg_f\"; "
        f"rm -f \"$_cg_f\"; echo \"{MARK} rc $_cg_r\"; return $_cg_r; }}; "
        # the data lines of every frame below carry the "| " prefix
        f"echo '{MARK} v2'; "
    )


def gpu_query_command(
    nvidia_smi: str = "nvidia-smi",
    timeout: float = 5,
    gpu_fields: tuple[GpuField, ...] = GPU_FIELDS,
    app_fields: tuple[GpuField, ...] = APP_FIELDS,
    *,
    apps: bool = True,
    describe: bool = False,
    container: int | None = None,
    lxc_info: str = "lxc-info",
    fdscan: bool = False,
) -> str:
    """One ``sh`` command running the queries under a deadline, framed (see module doc).

    ``nvidia_smi`` is the binary (inside ``pct exec`` PATH is minimal: ``/usr/bin/nvidia-smi``);
    ``timeout`` is the deadline of each query, seconds; ``gpu_fields`` and ``app_fields`` the
    columns asked for (a subset of :data:`GPU_FIELDS` / :data:`APP_FIELDS`, for older drivers).
    ``gpu_fields=()`` skips the GPU query (the process list is then asked for regardless),
    ``apps=False`` the process list (inside a container the driver lists nothing).
    ``describe``: each listed pid's ``/proc`` entry follows (:mod:`.procmap`); ``container``: on
    a Proxmox host, the container's init is looked up too (``lxc-info -n CTID -p -H``).
    ``fdscan``: the processes holding ``/dev/nvidia*`` follow (the fallback, in the same trip).
    """
    smi = shlex.quote(nvidia_smi)
    gpu_q = ",".join(f.query for f in gpu_fields)
    app_q = ",".join(f.query for f in app_fields)
    fmt = "--format=csv,noheader,nounits"
    q = shlex.quote
    parts = [query_prelude(timeout)]
    run_apps = ""
    if apps and app_fields:
        keep = "_cg_keep=1; " if describe else ""
        run_apps = f"{keep}echo {q(f'{MARK} compute-apps {app_q}')}; _cg_q {smi} {q('--query-compute-apps=' + app_q)} {fmt}; "
    if gpu_fields:
        parts.append(f"echo {q(f'{MARK} query-gpu {gpu_q}')}; if _cg_q {smi} {q('--query-gpu=' + gpu_q)} {fmt}; then {run_apps or ':; '}fi; ")
    else:
        parts.append(run_apps)
    if describe:
        parts.append(describe_section(container, lxc_info))
    if fdscan:
        parts.append(fdscan_command() + "; ")
    parts.append("true")
    return "".join(parts)
