"""Asking a driver only what it knows: :class:`GpuProbe`, the GPU probe with a memory.

A driver that does not know one queried field rejects the whole query (``Field
"mig.mode.current" is not a valid field to query.`` on stdout, exit 2): without a fallback one
field that is newer than the driver empties the whole GPU pane.  :meth:`GpuProbe.run` runs the
probe, and when a query is refused for a field it asks again without that field; when the refusal
names no field, or a field every driver has (:attr:`~.command.GpuField.core`), it asks for the
core fields only.  The set that worked is kept for the rest of the session, so later refreshes
ask only what the driver knows, in one call.  The fields left out read as NA (reason
:data:`~.parse.NOT_QUERIED`: ``N/A`` on screen, never a number, never a finding) and one
``info`` finding (``gpu-fields-unknown``) names them.

The probe does not know the transport: :meth:`GpuProbe.run` takes a coroutine function that runs
one shell command and returns ``(stdout, stderr, exit_code)``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ...layers import Finding, Layer, Severity
from .command import FIELD_TABLES, GpuField, core_fields, gpu_query_command
from .model import GPUSnapshot
from .parse import parse_gpu_output
from .values import is_na

__all__ = ["GpuProbe", "Runner"]

#: runs one shell command in the target: (stdout, stderr, exit code)
Runner = Callable[[str], Awaitable[tuple[Any, Any, "int | None"]]]


@dataclass
class GpuProbe:
    """The GPU probe of one session: the binary, and the fields this driver answers."""

    nvidia_smi: str = "nvidia-smi"
    #: query name (``query-gpu``, ``compute-apps``) → the columns asked for now
    fields: dict[str, tuple[GpuField, ...]] = field(default_factory=lambda: dict(FIELD_TABLES))
    #: query name → the nvidia-smi fields left out (refused by the driver, or dropped with them)
    left_out: dict[str, list[str]] = field(default_factory=dict)
    #: ask for the process list (inside a container the driver lists none: the host is asked instead)
    apps: bool = True
    #: describe each listed pid's /proc entry, and with ``container`` the container's init (:mod:`.procmap`)
    describe: bool = False
    container: int | None = None
    #: the /dev/nvidia* fd scan in the same command (the fallback, once it is known to be needed)
    fdscan: bool = False

    def command(self, timeout: float) -> str:
        return gpu_query_command(self.nvidia_smi, timeout, self.fields["query-gpu"], self.fields["compute-apps"],
                                 apps=self.apps, describe=self.describe, container=self.container,
                                 fdscan=self.fdscan)

    @property
    def max_tries(self) -> int:
        """One try per field that may be left out, one for the core set, and the first."""
        return 2 + sum(1 for t in FIELD_TABLES.values() for f in t if not f.core)

    def narrow(self, snap: GPUSnapshot) -> bool:
        """Leave out what the driver refused in ``snap``; True when asking again can do better."""
        for f in snap.findings:
            what = f.subject.get("query")
            if f.kind != "query-unsupported" or what not in self.fields:
                continue
            current = self.fields[what]
            name = str(f.subject.get("field") or "").strip().lower()
            named = [x for x in current if x.query.lower() == name]
            if named and not any(x.core for x in named):
                keep = tuple(x for x in current if x not in named)
            else:  # no field named, or one every driver should know: the core set, if not asked already
                keep = core_fields(current)
                if keep == current:
                    return False
            self.left_out.setdefault(what, []).extend(x.query for x in current if x not in keep)
            self.fields[what] = keep
            return True
        return False

    async def run(self, runner: Runner, timeout: float) -> GPUSnapshot:
        """Run the probe (again with fewer fields while the driver refuses some); never raises
        for nvidia-smi's failures (the runner's own errors propagate)."""
        snap = GPUSnapshot()
        for _ in range(self.max_tries):
            out, err, code = await runner(self.command(timeout))
            snap = parse_gpu_output(out, err, code, timeout_s=timeout)
            if not self.narrow(snap):
                break
        if self.left_out and snap.gpus:
            snap.findings.append(self.finding(snap))
        return snap

    def finding(self, snap: GPUSnapshot) -> Finding:
        """The ``info`` finding naming the fields this driver does not know."""
        names = [n for what in ("query-gpu", "compute-apps") for n in self.left_out.get(what, [])]
        drv = next((g.driver_version for g in snap.gpus if not is_na(g.driver_version)), None)
        who = f"nvidia-smi (driver {drv})" if drv else "this nvidia-smi"
        return Finding(
            Layer.GPU,
            "gpu-fields-unknown",
            f"{who} does not know {', '.join(names)}: shown as N/A",
            advice="Nothing is wrong with the GPUs: the driver is older than these fields. Update it to see them.",
            severity=Severity.INFO,
            subject={"fields": {k: list(v) for k, v in self.left_out.items()}, "driver_version": drv},
        )
