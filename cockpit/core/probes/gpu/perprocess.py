"""GPU memory per process, even inside a container: :class:`ProcessProbe`.

nvidia-smi inside an LXC or Docker container lists no processes (the driver's pids are the
host's, which the container's PID namespace does not have), so "no compute processes" would sit
beside 79 GiB in use.  Per refresh, :meth:`ProcessProbe.run` picks the best way it has:

``host query`` (a runtime whose host can list the container's GPU processes: pct)
    the process list is asked for **on the host**, in one command with each listed pid's ``/proc``
    entry and the container's init (``lxc-info -n CTID -p -H``), beside the GPU query in the
    container (both at once); host pids are mapped to the container's (:mod:`.owners`).
``nvidia-smi`` (a plain target)
    the process list where the job runs, its pids described in the same command.
``fd scan``
    when the host cannot be asked (no ``lxc-info``, no permission, no nvidia-smi there) or a plain
    target's driver lists nothing while memory is in use: the target's processes that hold
    ``/dev/nvidia*``, without amounts.

``snapshot.method`` and ``method_note`` say which was used and why.  A host that could not be
asked is asked again after :attr:`ProcessProbe.host_retry_s` seconds, not on every refresh.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .command import gpu_query_command
from .fallback import GpuProbe, Runner
from .memory import unaccounted_memory
from .model import GPUSnapshot
from .owners import FD_SCAN, HOST_QUERY, TARGET_QUERY, apply_fdscan, map_processes
from .parse import parse_gpu_output
from .procmap import container_of_cgroup, fdscan_command, parse_fdscan
from .values import NaType, is_na

__all__ = ["ProcessProbe", "FD_SCAN_MIN_MIB"]

#: a GPU using more than this (MiB) with no process listed makes a plain target scan its fds
FD_SCAN_MIN_MIB = 256


def _one_line(text: str, limit: int = 160) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:limit]


@dataclass
class ProcessProbe:
    """Per-process GPU memory for one target (``container``: the container whose processes the
    host can list and map, the runtime's ``gpu_host_container``; ``[gpu] where``)."""

    container: int | None = None
    where: str = "container"
    lxc_info: str = "lxc-info"
    host_retry_s: float = 60.0
    #: monotonic time before which the host is not asked again (it failed)
    host_down_until: float = 0.0
    #: why the host could not be asked, the last time it failed
    host_note: str = ""
    #: the last refresh needed the fd scan: the next one runs it in the GPU command (one trip)
    scan_next: bool = False

    @property
    def on_host(self) -> bool:
        """A container on a host cockpit can reach: the host is the place to ask."""
        return self.container is not None

    async def run(self, gpu: GpuProbe, target: Runner, host: Runner, timeout: float, procs: Iterable[Any] = ()) -> GPUSnapshot:
        """One refresh of the GPU pane: GPUs, processes mapped into the target, findings.
        ``target`` runs a command where the job runs, ``host`` on the SSH host; ``procs`` is the
        target's process table (names for the fd scan).  The runners' errors propagate."""
        gpu.fdscan = self.scan_next and self.where != "host"  # the scan runs in the target
        self.scan_next = False
        if not self.on_host:
            return await self._plain(gpu, host if self.where == "host" else target, target, timeout, procs)
        ask_host = time.monotonic() >= self.host_down_until
        if self.where == "host":
            gpu.apps, gpu.describe, gpu.container = True, ask_host, self.container
            snap = await gpu.run(host, timeout)
            note = self._host_result(snap, snap) if ask_host else self.host_note
        else:
            gpu.apps, gpu.describe, gpu.container = False, False, None
            if ask_host:
                snap, note = await self._both(gpu, target, host, timeout)
            else:
                snap, note = await gpu.run(target, timeout), self.host_note
        if note:
            self.host_note, self.host_down_until = note, time.monotonic() + self.host_retry_s
            if snap.gpus:
                await self._fdscan(snap, target, procs, f"host query unavailable: {note}")
        else:
            self.host_note, self.host_down_until = "", 0.0
            map_processes(snap, snap.pid_table, self.container)
            snap.method, snap.method_note = HOST_QUERY, f"host pids mapped into container {self.container}"
        self._unlisted(snap)
        return snap

    async def _plain(self, gpu: GpuProbe, runner: Runner, target: Runner, timeout: float, procs: Iterable[Any]) -> GPUSnapshot:
        gpu.apps, gpu.describe, gpu.container = True, True, None
        snap = await gpu.run(runner, timeout)
        map_processes(snap, snap.pid_table, None)
        snap.method = TARGET_QUERY
        busy = any(not is_na(g.memory_used_mib) and g.memory_used_mib > FD_SCAN_MIN_MIB for g in snap.gpus)
        if not snap.processes and busy and snap.exit_codes.get("compute-apps") == 0:
            await self._fdscan(snap, target, procs, "nvidia-smi lists no process here (a container, or another PID namespace)")
        self._unlisted(snap)
        return snap

    async def _both(self, gpu: GpuProbe, target: Runner, host: Runner, timeout: float) -> tuple[GPUSnapshot, str]:
        """The GPU query in the container and the process list on the host, at the same time."""
        cmd = gpu_query_command(gpu.nvidia_smi, timeout, (), gpu.fields["compute-apps"], describe=True,
                                container=self.container, lxc_info=self.lxc_info)
        snap_r, host_r = await asyncio.gather(gpu.run(target, timeout), host(cmd), return_exceptions=True)
        if isinstance(snap_r, BaseException):
            raise snap_r
        if isinstance(host_r, BaseException):
            if not isinstance(host_r, Exception):
                raise host_r
            return snap_r, f"the host could not run it: {_one_line(str(host_r))}"
        out, err, code = host_r
        hs = parse_gpu_output(out, err, code, timeout_s=timeout)
        by_uuid = {g.uuid: g.index for g in snap_r.gpus if not is_na(g.uuid)}
        for p in hs.processes:
            p.gpu_index = by_uuid.get(p.gpu_uuid, NaType("[not in the container]"))
        snap_r.processes, snap_r.pid_table = hs.processes, hs.pid_table
        return snap_r, self._host_result(hs, snap_r)

    def _host_result(self, hs: GPUSnapshot, snap: GPUSnapshot) -> str:
        """Why the host's answer cannot place the pids ("" when it can)."""
        failed = [f for f in hs.findings if f.subject.get("query") == "compute-apps" or f.kind in ("probe-cut", "probe-failed")]
        if "compute-apps" not in hs.exit_codes or hs.exit_codes.get("compute-apps") != 0 or failed:
            f = failed[0] if failed else None
            # its own words (the finding's summary speaks of a container: this ran on the host)
            why = _one_line(str(f.subject.get("output") or "")) or f.summary.replace("process list unavailable — ", "") if f else ""
            return f"nvidia-smi on the host: {_one_line(why) or 'no answer'}"
        table = hs.pid_table
        if table is None:
            return "the host's /proc could not be read"
        placed = table.init_pid is not None or any(
            container_of_cgroup(i.cgroup) is not None for i in table.pids.values())
        if snap.processes and not placed:
            return f"lxc-info on the host: {table.init_error or 'no container init'}"
        return ""

    async def _fdscan(self, snap: GPUSnapshot, target: Runner, procs: Iterable[Any], why: str) -> None:
        self.scan_next = True
        holders = snap.fd_holders
        if holders is None:  # not in the GPU command this time: a trip of its own
            out, _err, _code = await target(fdscan_command())
            holders = parse_fdscan(out)
        if holders is None:
            snap.method, snap.method_note = "", f"{why}; the fd scan printed nothing"
            for p in snap.processes:  # host pids nobody placed: never shown as the target's
                if is_na(p.owner):
                    p.owner = "unknown"
            return
        apply_fdscan(snap, holders, procs)
        snap.method, snap.method_note = FD_SCAN, why

    @staticmethod
    def _unlisted(snap: GPUSnapshot) -> None:
        if snap.method == FD_SCAN and snap.processes:
            return  # the holders are known, their amounts are not
        snap.findings.extend(f for f in unaccounted_memory(snap, None) if f.kind == "gpu-memory-unlisted")
