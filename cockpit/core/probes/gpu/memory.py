"""GPU memory that no live process accounts for: :func:`unaccounted_memory`.

The GPU snapshot's pids are the driver's (the host's PID namespace); this compares them with the
host's live and zombie pids and with each GPU's used memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...layers import Finding, Layer, Severity
from .model import GPUSnapshot, jsonable
from .values import is_na

__all__ = ["unaccounted_memory"]


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
        subject: dict[str, Any] = {
            "pid": p.pid,
            "process_name": jsonable(p.process_name),
            "used_memory_mib": jsonable(mem),
            "gpu_uuid": jsonable(p.gpu_uuid),
            "gpu_index": jsonable(p.gpu_index),
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
                    subject={"index": jsonable(g.index), "uuid": g.uuid, "unaccounted_mib": gap},
                )
            )
    return out
