"""For ``bench_log_pane.py``: how far a screen is behind the log file (:class:`LagSampler`), and a
py-spy profile of the TUI over a window (:func:`profiler`), the TUI's CPU over a window (:class:`CpuWindow`)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.tui_target import CLK_TCK, Tmux, cpu_ticks, pane_step

ELAPSED_RE = re.compile(rb"\| elapsed (\d+\.\d+)s")


class LagSampler(threading.Thread):
    """Every ``interval`` s: the age of the newest line on the TUI's screen, and on a ``tail -f`` of the
    same file in a window of the same tmux server (the baseline), against the newest line in the file.
    Ages are in the job's own clock (each line says ``elapsed X.XXs``: when the job wrote it), so ms of
    log; a screen's newest step is looked up in the file (the log pane may be too narrow to show it)."""

    def __init__(self, tmux: Tmux, panes: dict[str, str], log_path: Path, interval: float, window: int = 8 << 20) -> None:
        super().__init__(daemon=True)
        self.tmux, self.panes, self.log_path, self.interval, self.window = tmux, panes, log_path, interval, window
        self.lag: dict[str, list[float]] = {name: [] for name in panes}
        self.lost: dict[str, int] = {name: 0 for name in panes}  # samples whose step was no longer in the file's window
        self.stop_ev = threading.Event()
        self.on = threading.Event()  # sampling only while set (the job streams)

    def tail(self) -> bytes:
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - self.window))
                return fh.read()
        except OSError:
            return b""

    @staticmethod
    def elapsed_at(data: bytes, at: int) -> float | None:
        m = ELAPSED_RE.search(data, at, data.find(b"\n", at) if data.find(b"\n", at) >= 0 else len(data))
        return float(m.group(1)) if m else None

    def sample(self) -> None:
        shown = {name: pane_step(self.tmux.cmd("capture-pane", "-p", "-t", target, check=False)) for name, target in self.panes.items()}
        data = self.tail()
        end = data.rstrip(b"\n").rfind(b"\nstep ")
        newest = self.elapsed_at(data, end + 1) if end >= 0 else None
        if newest is None:
            return
        for name, step in shown.items():
            if step is None:
                continue
            at = data.rfind(b"\nstep %d |" % step)
            el = self.elapsed_at(data, at + 1) if at >= 0 else None
            if el is None:
                self.lost[name] += 1
                continue
            self.lag[name].append(max(0.0, newest - el) * 1000)

    def run(self) -> None:
        nxt = time.monotonic()
        while not self.stop_ev.is_set():
            if self.on.is_set():
                self.sample()
            nxt += self.interval
            self.stop_ev.wait(max(0.0, nxt - time.monotonic()))



def profiler(out: str | None, pid: int, seconds: float) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of the TUI over the window without key presses (collapsed stacks in ``out``);
    non-blocking: the TUI is never paused, so the window's CPU figure stays the TUI's own."""
    if not out:
        return None
    spy = shutil.which("py-spy")
    if spy is None:
        print("py-spy not found: no profile", file=sys.stderr)
        return None
    return subprocess.Popen([spy, "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))), "--rate", "200",
                             "--nonblocking", "--format", "raw", "--output", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class CpuWindow:
    def __init__(self, sampler: Any, tui: int) -> None:
        self.sampler, self.tui = sampler, tui

    def __enter__(self) -> CpuWindow:
        self.t0 = time.monotonic()
        self.c0 = cpu_ticks(self.tui) or 0
        self.h0 = self.sampler.helpers_ticks()
        return self

    def close(self) -> tuple[float, float, float]:
        wall = time.monotonic() - self.t0
        c = (cpu_ticks(self.tui) or self.c0) - self.c0
        h = self.sampler.helpers_ticks() - self.h0
        return wall, 100.0 * c / CLK_TCK / wall, 100.0 * h / CLK_TCK / wall

    def __exit__(self, *a) -> None:
        pass


def quiet_cpu(sampler: Any, tui: int, seconds: float) -> tuple[float, float, float]:
    """CPU of the TUI and its helpers over ``seconds`` without any key press."""
    with CpuWindow(sampler, tui) as w:
        time.sleep(seconds)  # the measuring window itself
    return w.close()
