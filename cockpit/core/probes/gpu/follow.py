"""GPUs as one long-lived stream: ``nvidia-smi --query-gpu=… --format=csv,noheader,nounits -lms N``.

Polling the GPUs runs nvidia-smi (and a shell around it) every refresh; nvidia-smi's own loop
(``-lms``) keeps one process and its NVML handle open and prints one row per GPU each period.
:class:`GpuFollower` keeps it running where the GPU query runs (the container, or the host with
``[gpu] where = "host"``) on a channel of its own (:class:`~cockpit.core.remote.follow.StreamFollower`:
restarted with backoff when it dies, ``unsupported`` when nvidia-smi fails by itself before its
first row, and the observer then polls as before).

A *sample* is one row per GPU.  Rows arrive one at a time; a sample is complete when it has as
many rows as the last full poll found GPUs, or when a row's index repeats the sample's first.

The per-process list (``--query-compute-apps``, the host's ``/proc``, the fd scan) is not
streamed: the observer runs the full probe at a lower rate (``[gpu] apps_interval``) and
:func:`merge_sample` lays each streamed sample over the last full snapshot: new GPU values, the
processes and their findings kept until the next full probe.  A hung driver stops the rows: a
sample older than two periods is not used, and the full probe (which survives a hang) runs.
"""

from __future__ import annotations

import dataclasses
import shlex
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

from ...remote.follow import StreamFollower, wrap
from .command import MARK, GpuField
from .findings import value_findings
from .model import GPUSnapshot
from .parse import _split_row, parse_gpu_output

__all__ = ["GpuFollower", "stream_command", "merge_sample", "VALUE_KINDS"]

#: findings made from the GPUs' values alone (redone for each streamed sample)
VALUE_KINDS = frozenset({"gpu-lost", "gpu-value-error"})


def stream_command(nvidia_smi: str, fields: tuple[GpuField, ...], every_s: float) -> str:
    """The remote text: a header naming the fields, then nvidia-smi's loop (its failures too)."""
    q = ",".join(f.query for f in fields)
    ms = max(100, int(every_s * 1000))
    tool = f"{shlex.quote(nvidia_smi)} {shlex.quote('--query-gpu=' + q)} --format=csv,noheader,nounits -lms {ms} 2>&1"
    # the header names the stream shell's pid (where it runs, as ps there shows it: cockpit's own)
    return wrap(MARK, f"echo \"{MARK} stream $$\" {shlex.quote(q)}; ", tool)


class GpuFollower(StreamFollower):
    """One ``nvidia-smi -lms`` kept running; :attr:`sample` is the newest complete one."""

    name = "gpu"
    tool = "nvidia-smi"

    def __init__(self, open_lines: Callable[[str], AsyncIterator[bytes]], nvidia_smi: str,
                 fields: tuple[GpuField, ...], every_s: float, *, gpus: int | None = None) -> None:
        super().__init__(open_lines, stream_command(nvidia_smi, fields, every_s), mark=MARK, header_lines=1)
        self.fields = fields
        self.every_s = every_s
        #: GPUs per sample, as the last full poll found them (None: by the index repeating)
        self.gpus = gpus
        #: (received at, rows) of the newest complete sample
        self.sample: tuple[float, list[str]] | None = None
        #: lines that were not rows (nvidia-smi's own complaints), the newest few
        self.noise: deque[str] = deque(maxlen=5)
        #: the stream shell's pid where it runs (the container's view): cockpit's own process
        self.shell_pid: int | None = None
        self._rows: list[str] = []
        #: the GPU index of the sample's first row (a row with it again starts the next sample)
        self._first_index = ""

    def what(self) -> str:
        return "the GPU stream (nvidia-smi -lms)"

    def on_up(self) -> None:
        self._rows = []
        self.sample = None
        words = self.header[0].split()
        self.shell_pid = int(words[2]) if len(words) > 2 and words[2].isdigit() else None

    def on_line(self, line: str) -> bool:
        cells = _split_row(line, self.fields)
        if cells is None:
            if line.strip():
                self.noise.append(line[:300])
            return False
        index = cells[0].strip()
        if self._rows and index == self._first_index:
            self._complete()
        if not self._rows:
            self._first_index = index
        self._rows.append(line)
        if self.gpus is not None and len(self._rows) >= self.gpus:
            self._complete()
        return True

    def _complete(self) -> None:
        if self._rows:
            self.sample, self._rows = (time.time(), self._rows), []

    def fresh(self, now: float | None = None) -> tuple[float, list[str]] | None:
        """The newest sample if it is at most two periods old (a hung driver prints none)."""
        s = self.sample
        now = time.time() if now is None else now
        if not self.ready or s is None or now - s[0] > max(2 * self.every_s, self.every_s + 1.0):
            return None
        return s

    def frame(self, rows: list[str]) -> str:
        """The rows as the full probe's framed output (:mod:`.command`), for :func:`parse_gpu_output`."""
        q = ",".join(f.query for f in self.fields)
        return f"{MARK} v2\n{MARK} query-gpu {q}\n" + "".join(f"| {r}\n" for r in rows) + f"{MARK} rc 0\n"


def merge_sample(full: GPUSnapshot, text: str, at: float) -> GPUSnapshot | None:
    """``full`` with the GPU values of one streamed sample; None when the sample cannot stand in
    for a poll (no GPU, a line that was not a row, another set of GPUs: the full probe runs)."""
    s = parse_gpu_output(text, "", 0, collected_at=at)
    if not s.gpus or s.error or s.unparsed or [g.uuid for g in s.gpus] != [g.uuid for g in full.gpus]:
        return None
    findings = [f for f in full.findings if f.kind not in VALUE_KINDS] + value_findings(s.gpus)
    return dataclasses.replace(full, gpus=s.gpus, findings=findings, collected_at=at)
