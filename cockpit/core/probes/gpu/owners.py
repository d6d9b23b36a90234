"""Whose GPU memory it is: the driver's pids placed in the target, and what is wrong with them.

:func:`map_processes` reads the ``/proc`` entries the probe collected (:mod:`.procmap`) and gives
each listed process its pid inside the container (``NSpid``), its state and its owner: the
container (same PID namespace as the container's init, or Proxmox's ``/lxc/CTID/`` cgroup), the
host, another container (named from its cgroup), or another PID namespace.  Memory held by a pid
that is gone, by a zombie, or by anything outside the container becomes a finding with the advice
that fits.  :func:`apply_fdscan` does the same with what the in-container fallback can see: which
processes hold ``/dev/nvidia*`` (no amounts).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...layers import Finding, Layer, Severity
from .model import GPUProcess, GPUSnapshot, jsonable
from .procmap import PidInfo, PidTable, container_of_cgroup
from .values import NaType, is_na

__all__ = ["map_processes", "apply_fdscan", "memory_by_container_pid", "HOST_QUERY", "TARGET_QUERY", "FD_SCAN"]

HOST_QUERY = "host query"
TARGET_QUERY = "nvidia-smi"
FD_SCAN = "fd scan"


def _owner(info: PidInfo, table: PidTable, container: int) -> str:
    init = table.init
    cg = container_of_cgroup(info.cgroup)
    if init is not None and init.ns is not None and info.ns == init.ns:
        return "container"
    if cg == ("lxc", str(container)):
        return "container"  # also a PID namespace nested inside it (Docker in the container)
    if cg is not None:
        return f"{'container' if cg[0] == 'lxc' else 'docker'} {cg[1]}"
    if info.ns is not None and info.ns == table.self_ns:
        return "host"
    if info.ns is not None and init is not None and init.ns is not None:
        return "another PID namespace"
    return "unknown"


def _container_pid(info: PidInfo, table: PidTable) -> Any:
    init = table.init
    depth = len(init.nspid) - 1 if init is not None and len(init.nspid) >= 2 else 1
    return info.nspid[depth] if len(info.nspid) > depth else NaType("[not in NSpid]")


def map_processes(snap: GPUSnapshot, table: PidTable | None, container: int | None) -> None:
    """Give each of ``snap.processes`` (host pids) its container pid, state and owner, keep those
    that concern the target (on its GPUs, or its own), and add the findings.  ``container=None``:
    the target is where nvidia-smi ran (no namespace to map into)."""
    if table is None:
        return
    uuids = {g.uuid for g in snap.gpus if not is_na(g.uuid)}
    kept: list[GPUProcess] = []
    for p in snap.processes:
        info = table.pids.get(p.pid) if isinstance(p.pid, int) else None
        if info is None:
            kept.append(p)  # not described (over the cap): shown as listed
            continue
        p.state = info.stat
        if not info.exists:
            p.owner = "gone"
        elif container is None:
            p.owner, p.container_pid = "target", p.pid
        else:
            p.owner = _owner(info, table, container)
            if p.owner == "container":
                p.container_pid = _container_pid(info, table)
        if container is not None and p.owner != "container" and p.gpu_uuid not in uuids:
            continue  # on a GPU this container does not have (or cannot see): another tenant's business
        kept.append(p)
        finding = _finding(p, info, table, container)
        if finding is not None:
            snap.findings.append(finding)
    snap.processes = kept


def _who(p: GPUProcess, info: PidInfo | None) -> str:
    name = info.name if info is not None and info.name else (None if is_na(p.process_name) else str(p.process_name))
    if not is_na(p.container_pid) and p.container_pid != p.pid:
        pid = f"pid {p.container_pid} (host pid {p.pid})"
    else:
        pid = f"pid {p.pid}"
    return pid + (f", {name}" if name else "")


def _where(p: GPUProcess) -> str:
    return f"GPU {p.gpu_index}" if not is_na(p.gpu_index) else f"GPU {p.gpu_uuid}"


def _mem(p: GPUProcess) -> str:
    return f"{p.used_memory_mib} MiB" if not is_na(p.used_memory_mib) else "memory"


def _subject(p: GPUProcess, **extra: Any) -> dict[str, Any]:
    d = {k: jsonable(v) for k, v in p.to_dict().items()}
    d.update(extra)
    return d


def _finding(p: GPUProcess, info: PidInfo, table: PidTable, container: int | None) -> Finding | None:
    ct = f"container {container}" if container is not None else "the target"
    if not info.exists:
        return Finding(
            Layer.GPU, "gpu-memory-dead-pid", f"{_where(p)}: {_mem(p)} held by {_who(p, None)}, which no longer exists",
            advice="No process has this pid: the driver still holds its memory (a process stuck in teardown). "
            "On the host: `fuser -v /dev/nvidia*`; a GPU reset (nvidia-smi -r) or a host reboot frees it.",
            severity=Severity.ERROR, subject=_subject(p))
    if info.state == "Z":
        parent = table.pids.get(info.ppid) if info.ppid is not None else None
        pname = f"{info.ppid} ({parent.name})" if parent is not None and parent.name else f"{info.ppid}"
        if (info.threads or 0) > 1:
            advice = (f"Its main thread exited but {info.threads - 1 if info.threads else 'some'} thread(s) live on, "
                      "stuck in the kernel (often the NVIDIA driver): the memory is freed only when they are gone, "
                      "and no parent can reap it before. "
                      + (f"Restart the container (pct reboot {container}); " if container is not None else "Kill the process group or reboot; ")
                      + "if the memory stays, reset the GPU (nvidia-smi -r) or reboot the host.")
        else:
            advice = (f"It is dead but its parent {pname} has not reaped it (wait()): the parent must reap it, or be "
                      "restarted" + (f"; if the parent is the container's PID 1, restart the container (pct reboot {container})." if container is not None else "."))
        outside = "" if p.owner in ("container", "target") else f" outside {ct} ({p.owner})"
        return Finding(
            Layer.GPU, "gpu-memory-zombie", f"{_where(p)}: {_mem(p)} held by a zombie ({_who(p, info)}, {info.stat}){outside}",
            advice=advice, severity=Severity.ERROR, subject=_subject(p, parent_pid=info.ppid, threads=info.threads))
    if container is None or p.owner == "container" or p.owner == "unknown":
        return None
    if p.owner == "host":
        what, advice = "a process on the host", (
            "Not your job: a stray or another user's run on the host itself shares this GPU, and your job gets only "
            f"the rest of its memory. On the host: `ps -o pid,user,etime,args -p {p.pid}`; stop it if it is a leftover.")
    elif p.owner.startswith(("container ", "docker ")):
        what, advice = f"{p.owner} (another tenant)", (
            f"Another tenant ({p.owner}) uses this GPU, and your job gets only the rest of its memory: give each "
            "container its own GPUs (lxc.mount.entry / device passthrough) or agree on who runs when.")
    else:
        what, advice = "a process in another PID namespace", (
            f"Not in {ct}: another container or a sandbox on the host. On the host: "
            f"`cat /proc/{p.pid}/cgroup` names it; stop it or give each tenant its own GPUs.")
    return Finding(
        Layer.GPU, "gpu-memory-outside", f"{_where(p)}: {_mem(p)} held outside {ct} by {what}: {_who(p, info)}",
        advice=advice, severity=Severity.WARNING, subject=_subject(p))


def apply_fdscan(snap: GPUSnapshot, holders: dict[int, list[str]], procs: Iterable[Any] = ()) -> None:
    """The fallback's view: each process holding ``/dev/nvidia*`` (pids of the target, no
    amounts), named and stated from the target's process table ``procs`` (``ps`` rows)."""
    by_pid = {getattr(p, "pid", None): p for p in procs}
    snap.processes = []
    for pid, devs in sorted(holders.items()):
        row = by_pid.get(pid)
        stat = str(getattr(row, "state", "") or "") or NaType("[not in ps]")
        name = (getattr(row, "args", "") or getattr(row, "name", "")) if row is not None else ""
        p = GPUProcess(pid=pid, process_name=name or NaType("[not in ps]"),
                       used_memory_mib=NaType("[fd scan: no per-process memory]"),
                       container_pid=pid, state=stat, owner="container", devices=",".join(devs))
        gpus = [d[6:] for d in devs if d[6:].isdigit()]
        if len(gpus) == 1:
            p.gpu_index = int(gpus[0])
        snap.processes.append(p)
        if isinstance(stat, str) and stat.startswith("Z"):
            snap.findings.append(Finding(
                Layer.GPU, "gpu-memory-zombie",
                f"a zombie (pid {pid}, {stat}) holds {', '.join('/dev/' + d for d in devs)}: its GPU memory stays in use",
                advice="Its threads are stuck in the kernel (often the NVIDIA driver) or its parent has not reaped it: "
                "restart the container; if the memory stays, reset the GPU or reboot the host.",
                severity=Severity.ERROR, subject=_subject(p)))


def memory_by_container_pid(snap: GPUSnapshot | None) -> dict[int, Any]:
    """Container pid → GPU memory it holds, MiB (summed over GPUs; an NA when unknown), for the
    process table's column."""
    out: dict[int, Any] = {}
    if snap is None:
        return out
    for p in snap.processes:
        cpid = p.container_pid
        if not isinstance(cpid, int) or p.owner not in ("container", "target"):
            continue
        mem = p.used_memory_mib
        prev = out.get(cpid)
        if is_na(mem):
            out.setdefault(cpid, mem)
        elif prev is None or is_na(prev):
            out[cpid] = mem
        else:
            out[cpid] = prev + mem
    return out
