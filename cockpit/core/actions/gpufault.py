"""A GPU that failed while the job runs on: said in the verdict and the fate, never as a failure.

A job on several GPUs can go on logging progress while one of them has fallen off the bus (its
rank waits, or the job trains on the others until its next collective): its verify passes and its
fate reads ``running``, and the next step crashes or hangs.  :func:`gpu_faults` reads, once, what
says a GPU failed in the window the verdict covers (since the launch):

- ``nvidia-smi --query-gpu`` where ``[gpu] where`` says: a GPU it cannot reach (``Unable to
  determine the device handle for GPU …: GPU is lost``, exit 15) or whose values read
  ``[GPU is lost]`` is lost *now*;
- the host's kernel log, where cockpit reads it (pct): an Xid or "fallen off the bus" at or after
  the launch.

cockpit cannot tell which GPUs a job uses (its ``CUDA_VISIBLE_DEVICES``, its ranks' devices), so
every GPU of the target counts, and the text says it may be one the job uses.  Each finding's
layer is ``gpu``; :func:`gpu_note` is the sentence a verdict or a fate carries.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
from typing import Any

from ..layers import Finding, Layer, Severity, Verdict
from ..probes import kmsg
from ..probes.gpu.findings import diagnose
from ..remote.base import RemoteError
from .base import ActionContext

__all__ = ["gpu_faults", "gpu_note", "GPU_QUERY", "GpuPrefetch", "GPU_LEAD_S", "read_by_verdict"]

log = logging.getLogger(__name__)

#: the fields read: enough to name a GPU and to see ``[GPU is lost]`` in its values
GPU_QUERY = "index,pci.bus_id,uuid,pstate,temperature.gpu"
#: what the job's next steps risk, said after every fault
NEXT = "the job still runs, but its next steps may fail or hang if it uses this GPU (cockpit cannot tell which GPUs it uses)"
#: how long before a passing verify's settle window ends its GPU reading starts (an nvidia-smi takes 0.1-1 s on a real host)
GPU_LEAD_S = 1.0
_ADVICE = ("Check the host's kernel messages for an Xid; a GPU that fell off the bus needs a host reboot. "
           "Stop the job before it hangs in its next collective, or relaunch it on the GPUs that work.")


async def gpu_faults(ctx: ActionContext, launched_at: float | None) -> list[Finding]:
    """The GPUs that are lost now, and the GPU Xids since ``launched_at`` (see the module doc)."""
    cfg, rt = ctx.cfg, ctx.transport.runtime
    if not cfg.gpu.enabled or rt.scheduler is not None:  # a scheduler's job runs on its nodes, not here
        return []
    reads: list[Any] = [_lost_now(ctx)]
    if rt.reads_host_kmsg and launched_at:
        reads.append(_xids_since(ctx, launched_at))
    found: list[Finding] = []
    for part in await asyncio.gather(*reads):
        found.extend(part)
    return found


class GpuPrefetch:
    """A passing verify's GPU reading, started :data:`GPU_LEAD_S` before its settle window ends.

    Read after the verdict, it added an nvidia-smi and a kernel-log read to every passing attempt
    (40 ms in the lab, 0.1-1 s with a real nvidia-smi).  Read beside the window's last job readings,
    it may be the reading that finds a cut connection first: the next job reading then rebuilds
    the link itself, and :func:`~.reattach.read_job` says so from the transport's handshake count.
    A fault after it started is the fate follower's to see (it reads the GPUs every 10 s).
    """

    def __init__(self, ctx: ActionContext, launched_at: float | None) -> None:
        self.ctx, self.launched_at = ctx, launched_at
        self._task: asyncio.Task[list[Finding]] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(gpu_faults(self.ctx, self.launched_at))

    async def result(self) -> list[Finding]:
        """What the reading found (read now when it was not started: a window shorter than a reading)."""
        return await (self._task if self._task is not None else gpu_faults(self.ctx, self.launched_at))

    def drop(self) -> None:
        """Not wanted (no passing verdict) or verify cancelled: a reading in flight is cancelled."""
        if self._task is not None and not self._task.done():
            self._task.cancel()


def read_by_verdict(verdict: Verdict) -> list[Finding] | None:
    """What a passing verify's GPU reading found (its gpu stage's findings; none without one), so
    that the job's first fate and its follower do not read the GPUs again a moment later; None
    when the verdict read no GPUs (it did not pass)."""
    if not verdict.ok:
        return None
    st = verdict.gpu_fault_stage()
    return [] if st is None else [Finding.from_dict(f) for f in st.data.get("findings", [])]


def gpu_note(found: list[Finding], *, running: bool = True) -> str:
    """``a GPU fault while the job runs: GPU 00000000:01:00.0 is lost now: nvidia-smi says "…"; the job still runs, …``;
    for a job that is gone (``running=False``): ``a GPU fault in the job's window: …``."""
    if not found:
        return ""
    where = "while the job runs" if running else "in the job's window"
    head = f"a GPU fault {where}" if len(found) == 1 else f"{len(found)} GPU faults {where}"
    return f"{head}: " + "; ".join(f.summary for f in found) + (f"; {NEXT}" if running else "")


async def _lost_now(ctx: ActionContext) -> list[Finding]:
    gpu = ctx.cfg.gpu
    cmd = f"{shlex.quote(gpu.nvidia_smi)} --query-gpu={GPU_QUERY} --format=csv,noheader"
    try:
        res = await (ctx.run_host if gpu.where == "host" else ctx.run)(cmd, timeout=gpu.timeout)
    except RemoteError as e:  # evidence for a note: never a verdict of its own
        log.info("no GPU reading for the verdict's GPU check: %s", e)
        return []
    text = res.stdout.decode("utf-8", "replace")
    out = [_lost_row(line) for line in text.splitlines() if "[GPU is lost]" in line]
    found = [f for f in out if f is not None]
    if not res.ok and not res.timed_out:
        err = diagnose(res.exit_code, None, res.text, "query-gpu", None)
        if err.kind == "gpu-lost":
            said = _said(res.text)
            bus = err.subject.get("bus_id")
            found.append(Finding(Layer.GPU, "gpu-lost", f"GPU {bus or '(bus id not said)'} is lost now: nvidia-smi says \"{said}\" "
                                 f"(exit {res.exit_code})", _ADVICE, Severity.WARNING,
                                 {"bus_id": bus, "output": said, "exit_code": res.exit_code}))
    return found


def _said(text: str) -> str:
    """nvidia-smi's line about the lost GPU (its first line that names a device handle or a lost GPU)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    hit = next((ln for ln in lines if re.search(r"device handle|GPU is lost|fallen off the bus", ln, re.I)), None)
    return (hit or (lines[0] if lines else ""))[:240]


def _lost_row(line: str) -> Finding | None:
    cells = [c.strip() for c in line.split(",")]
    if len(cells) < 2:
        return None
    index, bus = cells[0], cells[1]
    name = f"GPU {index} ({bus})" if index.isdigit() else f"GPU {bus}"
    return Finding(Layer.GPU, "gpu-lost", f"{name} is lost now: nvidia-smi reads its values as [GPU is lost]", _ADVICE,
                   Severity.WARNING, {"index": int(index) if index.isdigit() else None, "bus_id": bus, "output": line.strip()[:240]})


async def _xids_since(ctx: ActionContext, since: float) -> list[Finding]:
    try:
        res = await ctx.run_host(kmsg.kmsg_command(), timeout=10)
    except RemoteError as e:
        log.info("no kernel log for the verdict's GPU check: %s", e)
        return []
    out: list[Finding] = []
    for f in kmsg.parse_kmsg(res.stdout).findings:
        ts = f.subject.get("last_ts") or f.subject.get("ts")
        if f.layer is Layer.GPU and f.kind in ("xid", "gpu-lost") and isinstance(ts, (int, float)) and ts >= since:
            said = f.subject.get("line") or f.summary
            out.append(Finding(Layer.GPU, f.kind, f"{f.summary}, since the launch: the host kernel log says \"{str(said)[:240]}\"", f.advice,
                               Severity.WARNING, dict(f.subject)))
    return out
