"""The GPU data model: :class:`GPU`, :class:`GPUProcess` and one tick's :class:`GPUSnapshot`.

Every attribute read from nvidia-smi may be an :class:`~.values.NaType`; each attribute's docstring
names its exact nvidia-smi field.  In ``to_dict`` an NA value travels as its reason (``[N/A]``,
``missing``, ``unparseable: …``) and ``from_dict`` turns it back into an NA.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from ...layers import Finding
from .values import NA, NaType, is_na

__all__ = ["GPU", "GPUProcess", "GPUSnapshot", "jsonable"]


def jsonable(v: Any) -> Any:
    """A value for JSON: an NA becomes its reason."""
    return v.reason if is_na(v) else v


def _from_json(v: Any) -> Any:
    if v is None:
        return NaType("missing")
    if isinstance(v, str) and (v.startswith("[") or v.startswith("unparseable") or v == "missing"):
        return NaType(v)
    return v


_R = TypeVar("_R", bound="_Record")


@dataclass
class _Record:
    """``to_dict``/``from_dict`` shared by :class:`GPU` and :class:`GPUProcess`."""

    def to_dict(self) -> dict[str, Any]:  # ``node`` only where there is one (a Slurm job's nodes)
        return {f.name: jsonable(getattr(self, f.name)) for f in fields(self) if f.name != "node" or getattr(self, f.name)}

    @classmethod
    def from_dict(cls: type[_R], d: dict[str, Any]) -> _R:
        return cls(**{f.name: str(d.get("node") or "") if f.name == "node" else _from_json(d.get(f.name)) for f in fields(cls)})


@dataclass
class GPU(_Record):
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
    node: str = ""
    """the compute node it is on (a Slurm job's GPUs, asked on each node; "" elsewhere)"""

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


@dataclass
class GPUProcess(_Record):
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
    container_pid: Any = NA
    """the pid inside the target (the container's PID namespace: ``NSpid``); NA when outside it"""
    state: Any = NA
    """``ps``-like state where the pid lives (``S``, ``Zl``…), ``gone`` when no process has it"""
    owner: Any = NA
    """where it runs: ``container`` (the target), ``host``, ``container 201``, ``docker 3f2a…``,
    ``another PID namespace``, ``unknown``"""
    devices: Any = NA
    """fd scan only: the ``/dev/nvidia*`` it holds, comma separated"""
    node: str = ""
    """the compute node it runs on (a Slurm job's; "" elsewhere)"""


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
    #: how the process list was made: "host query", "nvidia-smi", "fd scan" ("" before mapping)
    method: str = ""
    #: one line on the method: the pid namespace the pids were mapped into, or why the host was not asked
    method_note: str = ""
    #: the ``/proc`` entries of the listed pids, as the probe read them (:mod:`.procmap`)
    pid_table: Any = None
    #: pid → ``/dev/nvidia*`` it holds, when the probe ran the fd scan (:mod:`.procmap`)
    fd_holders: Any = None

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
            "process_method": self.method,
            "process_method_note": self.method_note,
        }
