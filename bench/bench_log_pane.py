"""The TUI's log pane under a 10,000 lines/second training log, driven as a person drives it.

A local-transport target in a temp dir (XDG_CONFIG_HOME / XDG_CACHE_HOME pointed at temp dirs too)
whose job writes ``--rate`` lines per second of training-log text (``step N | loss X | lr Y |
tokens/s Z …``, a warning every ``--warn-every`` lines: torch-style, none of them classified)
for ``--seconds``.  The real ``cockpit`` TUI runs in a detached tmux server at 160x45; the bench
presses ``t``, types a hypothesis, presses Enter and lets the job stream.

Measured in the same run, idle (before the attempt, and again after the job ended and the pane
caught up) and loaded (while the job streams):

* input responsiveness: ``?`` (help) until the help box shows in ``tmux capture-pane -p``, then
  Escape until it is gone (Escape includes Textual's lone-ESC delay, ESCDELAY, 100 ms by default);
* memory: VmRSS of the cockpit process, sampled every second (slopes over the streaming window, over a
  part of it without key presses, and after the job; RSS gained per help press when idle);
* CPU% of the cockpit process (utime+stime from /proc/PID/stat) over a window without key presses
  and over each whole phase (presses included), and of its helper processes (the local shell
  session), job excluded;
* keeping up: the job's last step (read from the log file) against the last step the log pane
  shows on screen, every second, at the job's end, and how long the pane took to catch up.  A
  repaint probe (``f`` ``f``: pause, follow again, which scrolls to the end and repaints the log)
  tells lines the pane never received from lines it holds but never drew.

The loaded phase runs: help presses (the ring fills meanwhile), a window without presses, the
repaint probe, the job's end.

Usage: ``python bench/bench_log_pane.py [--seconds 20] [--rate 10000] [--presses 10] [--keep]``
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.log_lag import CpuWindow, LagSampler, profiler, quiet_cpu  # noqa: E402
from bench.tui_target import (  # noqa: E402
    CLK_TCK,
    HELP_MARK,
    PROMPT_MARK,
    READY_MARK,
    STEP_RE,
    Deadline,
    Tmux,
    all_procs,
    check_config,
    cleanup,
    cmdline,
    cpu_ticks,
    descendants,
    pane_step,
    rss_kib,
    slope,
    start_tui,
    wait_for,
    write_target,
)

# ------------------------------------------------------------------------------------------------
# measurements

@dataclass
class Sample:
    t: float
    phase: str
    rss_kib: int | None
    tui_ticks: int | None
    helper_ticks: int
    job_step: int | None
    pane_step: int | None


@dataclass
class Press:
    phase: str
    open_s: float | None
    close_s: float | None


@dataclass
class Run:
    samples: list[Sample] = field(default_factory=list)
    presses: list[Press] = field(default_factory=list)
    windows: dict[str, tuple[float, float]] = field(default_factory=dict)
    cpu: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # window → (seconds, TUI CPU%, helpers CPU%)
    repaint: dict[str, tuple[int | None, int | None, int | None]] = field(default_factory=dict)
    rss_press: dict[str, float] = field(default_factory=dict)  # idle phase → MiB of RSS gained per help press
    notes: list[str] = field(default_factory=list)
    lag: dict[str, list[float]] = field(default_factory=dict)  # pane → age (ms) of its newest line vs the file, while streaming
    lag_lost: dict[str, int] = field(default_factory=dict)
    stream_cpu_s: float | None = None  # cockpit's CPU seconds from the job's first line until the screen caught up
    tail_cpu: float | None = None  # the baseline `tail -f`'s CPU% over the loaded window without presses


class Sampler(threading.Thread):
    """Every second: RSS and CPU of the TUI, CPU of its helpers (job excluded), job step, pane step."""

    def __init__(self, tmux: Tmux, tui: int, log_path: Path, gen_marker: str, run: Run, t0: float) -> None:
        super().__init__(daemon=True)
        self.tmux, self.tui, self.log_path, self.gen_marker, self.run_, self.t0 = tmux, tui, log_path, gen_marker, run, t0
        self.phase = "start"
        self.stop_ev = threading.Event()
        self.helper_seen: dict[int, int] = {}  # pid → last ticks (utime+stime+cutime+cstime)
        self.helper_total = 0
        self.job_sids: set[int] = set()
        self.helper_pids: set[int] = set()
        self.lock = threading.Lock()

    def helpers_ticks(self) -> int:
        """Cumulative CPU ticks of the TUI's descendants, not counting the job's session."""
        procs = all_procs()
        desc = descendants(self.tui)
        for pid in desc:
            if self.gen_marker in cmdline(pid):
                self.job_sids.add(procs.get(pid, (0, 0))[1])
        with self.lock:
            for pid in desc:
                if procs.get(pid, (0, -1))[1] in self.job_sids:
                    continue
                t = cpu_ticks(pid, children=True)
                if t is None:
                    continue
                self.helper_pids.add(pid)
                self.helper_total += t - self.helper_seen.get(pid, 0)
                self.helper_seen[pid] = t
            return self.helper_total

    def job_step(self) -> int | None:
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(0, 2)
                size = fh.tell()
                fh.seek(max(0, size - 65536))
                tail = fh.read().decode(errors="replace")
        except OSError:
            return None
        steps = STEP_RE.findall(tail)
        return int(steps[-1]) if steps else None

    def sample(self) -> Sample:
        return Sample(time.monotonic() - self.t0, self.phase, rss_kib(self.tui), cpu_ticks(self.tui), self.helpers_ticks(),
                      self.job_step(), pane_step(self.tmux.capture()))

    def run(self) -> None:
        nxt = time.monotonic()
        while not self.stop_ev.is_set():
            self.run_.samples.append(self.sample())
            nxt += 1.0
            self.stop_ev.wait(max(0.0, nxt - time.monotonic()))


def press_help(tmux: Tmux, timeout: float = 10.0) -> Press:
    """``?`` until the help box shows, Escape until it is gone (polling capture-pane)."""
    t0 = time.perf_counter()
    tmux.keys("?")
    try:
        wait_for(lambda: HELP_MARK in tmux.capture(), timeout, "the help screen", interval=0.002)
        t_open = time.perf_counter() - t0
    except Deadline:
        return Press("", None, None)
    t1 = time.perf_counter()
    tmux.keys("Escape")
    try:
        wait_for(lambda: HELP_MARK not in tmux.capture(), timeout, "the help screen to close", interval=0.002)
        t_close = time.perf_counter() - t1
    except Deadline:
        tmux.keys("Escape")
        return Press("", t_open, None)
    return Press("", t_open, t_close)


def presses(tmux: Tmux, phase: str, n: int, spacing: float, run: Run, until=None) -> None:
    for i in range(n):
        if until is not None and until():
            break
        p = press_help(tmux)
        p.phase = phase
        run.presses.append(p)
        if p.open_s is None or p.close_s is None:
            run.notes.append(f"{phase}: press {i + 1} timed out (open={p.open_s}, close={p.close_s})")
            wait_for(lambda: HELP_MARK not in tmux.capture(), 10, "the help screen to close")
        time.sleep(spacing)


def repaint_probe(tmux: Tmux, sampler: Sampler, want: int | None = None) -> tuple[int | None, int | None, int | None]:
    """Pause and resume following (``f`` ``f``: ``set_following(True)`` scrolls to the end and repaints the
    whole log) to tell "the pane has not received the lines" from "the screen was not repainted".

    Returns (pane step before, pane step after the repaint, job step at that moment)."""
    before = pane_step(tmux.capture())
    tmux.keys("f")
    wait_for(lambda: "PAUSED" in tmux.capture(), 10, "the log pane to pause", interval=0.01)
    tmux.keys("f")
    wait_for(lambda: "FOLLOW" in tmux.capture(), 10, "the log pane to follow again", interval=0.01)
    job = sampler.job_step()
    after = pane_step(tmux.capture())
    if want is not None:  # after the job: give the repaint a moment to reach the screen
        try:
            wait_for(lambda: (pane_step(tmux.capture()) or 0) >= want, 3, "the repaint", interval=0.02)
        except Deadline:
            pass
        after = pane_step(tmux.capture())
    return before, after, job



# ------------------------------------------------------------------------------------------------
# the run

def bench(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="cockpit-bench-log-"))
    cfg, log_path, stats_path, gen_marker = write_target(root, args)
    if args.config_extra:  # e.g. "[metrics]\nbuiltin = false": what a part of the TUI costs, by turning it off
        cfg.write_text(cfg.read_text() + "\n" + args.config_extra.replace("\\n", "\n") + "\n")
    try:
        check_config(cfg)
    except Exception:
        shutil.rmtree(root, ignore_errors=True)
        raise
    run = Run()
    sampler: Sampler | None = None
    t_start = time.monotonic()
    tmux, env, tui, term = start_tui(root, cfg, args.width, args.height)
    print(f"cockpit log-pane bench: {args.rate} lines/s for {args.seconds:g}s, ring {args.log_lines} lines, tmux {args.width}x{args.height} "
          f"(TERM={term}), {os.cpu_count()} CPUs, dir {root}", flush=True)
    try:
        wait_for(lambda: READY_MARK in tmux.capture(), 30, "the TUI to draw its log pane")
        time.sleep(args.settle)  # first refreshes (processes, history) land; a sampling pause, not a correctness wait
        sampler = Sampler(tmux, tui, log_path, gen_marker, run, t_start)
        sampler.start()

        # -- idle, before the attempt --------------------------------------------------------------
        quiet_loaded = max(args.quiet, 0.3 * args.seconds)
        if args.spacing is None:  # idle presses as far apart as the loaded ones, so whole-phase CPU compares
            args.spacing = max(0.2, (args.seconds - 1.0 - quiet_loaded - 3.0) / max(1, args.presses) - 0.35)
        sampler.phase = "idle-before"
        run.cpu["idle-before quiet"] = quiet_cpu(sampler, tui, args.quiet)
        r0 = rss_kib(tui) or 0
        with CpuWindow(sampler, tui) as w:
            presses(tmux, "idle-before", args.presses, args.spacing, run)
        run.rss_press["idle-before"] = ((rss_kib(tui) or 0) - r0) / 1024 / max(1, args.presses)
        run.cpu["idle-before"] = w.close()

        # -- the attempt, the way a person starts it -------------------------------------------------
        sampler.phase = "attempt"
        tmux.keys("t")
        wait_for(lambda: PROMPT_MARK in tmux.capture(), 15, "the hypothesis prompt")
        tmux.keys("C-u")
        tmux.keys("bench: the log pane keeps up with 10k lines/s", literal=True)
        t_enter = time.monotonic()
        tmux.keys("Enter")
        wait_for(lambda: sampler.job_step(), 60, "the job's first step line in its log")
        t_first_log = time.monotonic()
        stream_c0 = cpu_ticks(tui) or 0
        tui_win = tmux.cmd("display-message", "-p", "-t", "bench", "#{window_id}").strip()
        tmux.cmd("new-window", "-d", "-t", "bench", "-n", "tail", f"exec tail -n 0 -f {shlex.quote(str(log_path))}")
        tail_pid = int(tmux.cmd("list-panes", "-t", "bench:tail", "-F", "#{pane_pid}").split()[0])
        lags = LagSampler(tmux, {"cockpit": tui_win, "tail -f": "bench:tail"}, log_path, args.lag_interval)
        lags.start()
        lags.on.set()
        wait_for(lambda: pane_step(tmux.capture()), 30, "the first step line in the log pane", interval=0.01)
        t_first_pane = time.monotonic()
        run.notes.append(f"Enter → first step in the log file {t_first_log - t_enter:.2f}s, → first step in the pane "
                         f"{t_first_pane - t_enter:.2f}s")

        # -- loaded: the job streams -----------------------------------------------------------------
        job_done = lambda: stats_path.exists()  # noqa: E731  the job writes its stats as its last act
        sampler.phase = "loaded"
        with CpuWindow(sampler, tui) as w:
            # presses first (the ring fills meanwhile), then a window without presses, then the repaint probe
            left = args.seconds - (time.monotonic() - t_first_log) - quiet_loaded - 3.0
            spacing = max(0.2, left / max(1, args.presses) - 0.35)
            presses(tmux, "loaded", args.presses, spacing, run, until=job_done)
            if not job_done():
                sampler.phase = "loaded-quiet"
                window = min(quiet_loaded, max(1.0, args.seconds - (time.monotonic() - t_first_log) - 2.5))
                spy = profiler(args.profile, tui, window)
                tail0, tw0 = cpu_ticks(tail_pid) or 0, time.monotonic()
                run.cpu["loaded quiet"] = quiet_cpu(sampler, tui, window)
                run.tail_cpu = 100.0 * ((cpu_ticks(tail_pid) or tail0) - tail0) / CLK_TCK / (time.monotonic() - tw0)
                if spy is not None:
                    spy.wait(30)
                sampler.phase = "loaded"
            if not job_done():
                run.repaint["mid-stream"] = repaint_probe(tmux, sampler)
            wait_for(job_done, args.seconds + 60, "the job to finish", interval=0.02)
            t_job_end = time.monotonic()
            lags.on.clear()
            lags.stop_ev.set()
            run.lag, run.lag_lost = lags.lag, lags.lost
            screen_at_end = tmux.capture()
        run.cpu["loaded"] = w.close()
        stats = json.loads(stats_path.read_text())
        pane_at_end = pane_step(screen_at_end)

        # -- catch up (deadline), a forced repaint, then idle after ------------------------------------
        sampler.phase = "catch-up"
        caught = None
        try:
            wait_for(lambda: (pane_step(tmux.capture()) or 0) >= stats["steps"], args.catchup, "the pane to show the last step",
                     interval=0.02)
            caught = time.monotonic() - t_job_end
        except Deadline:
            pass
        run.stream_cpu_s = ((cpu_ticks(tui) or stream_c0) - stream_c0) / CLK_TCK
        pane_before_repaint = pane_step(tmux.capture())
        if caught is None:
            run.repaint["after the job"] = repaint_probe(tmux, sampler, want=stats["steps"])
        time.sleep(args.settle)
        sampler.phase = "idle-after"
        run.cpu["idle-after quiet"] = quiet_cpu(sampler, tui, args.quiet)
        r0 = rss_kib(tui) or 0
        with CpuWindow(sampler, tui) as w:
            presses(tmux, "idle-after", args.presses, args.spacing, run)
        run.rss_press["idle-after"] = ((rss_kib(tui) or 0) - r0) / 1024 / max(1, args.presses)
        run.cpu["idle-after"] = w.close()
        sampler.stop_ev.set()
        sampler.join(5)
        helpers = sorted(sampler.helper_pids)

        log_bytes = log_path.read_bytes()
        args.figures = report(args, run, stats, log_bytes, pane_at_end, pane_before_repaint, caught, tmux.capture(), helpers)
        return 0
    except Deadline as e:
        print(f"\nFAILED: {e}\n--- screen ---\n{tmux.capture()}", flush=True)
        return 1
    finally:
        if sampler is not None:
            sampler.stop_ev.set()
        cleanup(tmux, cfg, env, root, tui, gen_marker, keep=args.keep)


# ------------------------------------------------------------------------------------------------
# the report

def report(args, run: Run, stats: dict, log_bytes: bytes, pane_at_end, pane_final, caught, last_screen: str, helpers) -> dict:
    """Prints the figures; answers the main ones (for ``python -m bench``)."""
    phases = ("idle-before", "loaded", "idle-after")

    def ms(phase: str, attr: str, fn) -> float | None:
        xs = [getattr(p, attr) for p in run.presses if p.phase == phase and getattr(p, attr) is not None]
        return fn(xs) * 1000 if xs else None

    def rss_med(phase: str) -> float | None:
        xs = [s.rss_kib for s in run.samples if s.phase == phase and s.rss_kib]
        return statistics.median(xs) / 1024 if xs else None

    rows = []
    for label, attr, fn in (("help open  (?)   median ms", "open_s", statistics.median), ("help open  (?)   max ms", "open_s", max),
                            ("help close (Esc) median ms", "close_s", statistics.median), ("help close (Esc) max ms", "close_s", max)):
        rows.append((label, *(ms(ph, attr, fn) for ph in phases)))
    rows.append(("CPU % cockpit, no key presses", *(run.cpu[f"{ph} quiet"][1] if f"{ph} quiet" in run.cpu else None for ph in phases)))
    rows.append(("CPU % cockpit, whole phase", *(run.cpu[ph][1] for ph in phases)))
    rows.append(("CPU % helpers, whole phase", *(run.cpu[ph][2] for ph in phases)))
    rows.append(("RSS MiB (median of samples)", *(rss_med(ph) for ph in phases)))
    n_press = {ph: sum(1 for p in run.presses if p.phase == ph and p.close_s is not None) for ph in phases}

    f = lambda v: "—" if v is None else f"{v:.1f}"  # noqa: E731
    print()
    print(f"{'figure':<31}{'idle before':>12}{'loaded':>10}{'ratio':>8}{'idle after':>12}")
    for label, idle, load, after in rows:
        ratio = f"{load / idle:.2f}x" if idle and load is not None else "—"
        print(f"{label:<31}{f(idle):>12}{f(load):>10}{ratio:>8}{f(after):>12}")
    cnt = {ph: f"{n_press[ph]}; {run.cpu[ph][0]:.1f}s" for ph in phases}
    print(f"{'  (presses; phase seconds)':<31}{cnt['idle-before']:>12}{cnt['loaded']:>10}{'':>8}{cnt['idle-after']:>12}")
    quiet_s = {ph: f"{run.cpu[f'{ph} quiet'][0]:.1f}s" if f"{ph} quiet" in run.cpu else "—" for ph in phases}
    print(f"{'  (no-press window seconds)':<31}{quiet_s['idle-before']:>12}{quiet_s['loaded']:>10}{'':>8}{quiet_s['idle-after']:>12}")
    print("  ratio = loaded / idle before; helpers = the TUI's local shell session and its probes (job excluded)")

    samples = [s for s in run.samples if s.rss_kib]
    rss = [(s.t, s.rss_kib / 1024) for s in samples]
    loaded = [(s.t, s.rss_kib / 1024) for s in samples if s.phase in ("loaded", "loaded-quiet")]
    quiet = [(s.t, s.rss_kib / 1024) for s in samples if s.phase == "loaded-quiet"]
    still = [(s.t, s.rss_kib / 1024) for s in samples if s.phase == "catch-up"]
    print()
    print(f"memory (VmRSS of the cockpit process, {len(rss)} samples at 1 s):")
    if rss:
        print(f"  first {rss[0][1]:.1f} MiB   max {max(v for _, v in rss):.1f} MiB   last {rss[-1][1]:.1f} MiB")
        print(f"  slope: whole run {slope(rss):+.3f} MiB/s   while streaming {slope(loaded):+.3f} MiB/s   "
              f"streaming, no key presses {slope(quiet):+.3f} MiB/s ({len(quiet)} samples)   "
              f"job over, no key presses {slope(still):+.3f} MiB/s")
        print("  per help press (? then Esc), idle: " + "   ".join(f"{ph} {v:+.2f} MiB" for ph, v in run.rss_press.items()))
        marks = {"idle-before": "i", "attempt": "a", "loaded": "L", "loaded-quiet": "Q", "catch-up": "c", "idle-after": "i"}
        print("  series (MiB, phase): " + " ".join(f"{v:.0f}{marks.get(s.phase, '')}" for s, (_, v) in zip(samples, rss, strict=False)))

    n_lines = log_bytes.count(b"\n")
    print()
    print("keeping up:")
    print(f"  the job wrote {n_lines} lines ({stats['steps']} steps, {stats['warnings']} warnings) in {stats['seconds']:.2f}s "
          f"= {n_lines / stats['seconds']:.0f} lines/s, {len(log_bytes) / 2**20 / stats['seconds']:.2f} MiB/s")
    lag = [s.job_step - s.pane_step for s in run.samples if s.phase in ("loaded", "loaded-quiet") and s.job_step and s.pane_step]
    if lag:
        print(f"  on screen while streaming (job step - pane step, {len(lag)} samples): median {statistics.median(lag):.0f}  "
              f"max {max(lag)} steps (~{max(lag) / max(1, args.rate) * 1000:.0f} ms of log)")
        print("  lag series (steps): " + " ".join(str(x) for x in lag))
    for name, xs in run.lag.items():
        if xs:
            q = statistics.quantiles(xs, n=20) if len(xs) >= 2 else xs * 19
            print(f"  {name + ':':<9} newest line on screen behind the file's newest, {len(xs)} samples every {args.lag_interval:g}s: "
                  f"median {statistics.median(xs):.0f} ms  p95 {q[18]:.0f} ms  max {max(xs):.0f} ms  "
                  f"over 200 ms: {sum(x > 200 for x in xs)}" + (f"  (+{run.lag_lost[name]} samples > 8 MiB behind)" if run.lag_lost.get(name) else ""))
    quiet_cpu_tui = run.cpu.get("loaded quiet", (0.0, None, 0.0))[1]
    if quiet_cpu_tui is not None:
        print(f"  CPU, streaming without presses: cockpit {quiet_cpu_tui:.1f} % of a core; the baseline `tail -f` "
              + ("—" if run.tail_cpu is None else f"{run.tail_cpu:.1f} %") + "  (goal: cockpit < 35 %, never > 200 ms behind)")
    if run.stream_cpu_s is not None:
        print(f"  cockpit's CPU from the first line until the screen caught up: {run.stream_cpu_s:.1f} s for the {stats['seconds']:.1f} s job "
              f"= {100 * run.stream_cpu_s / stats['seconds']:.1f} % of a core (the loaded phase's presses and the repaint probe included; "
              "counts the work even when a loaded machine makes the TUI fall behind)")
    if pane_at_end is not None:
        print(f"  at the job's end the screen showed step {pane_at_end} of {stats['steps']} (behind by {stats['steps'] - pane_at_end})")
    else:
        print("  at the job's end the screen showed no step line")
    if caught is not None:
        print(f"  the screen showed the last step {caught * 1000:.0f} ms after the job ended")
    else:
        print(f"  the screen did NOT show the last step within {args.catchup:.0f}s (still step {pane_final})")
    for where, (before, after, job) in run.repaint.items():
        print(f"  repaint probe {where} (f f: pause, follow): screen step {before} → {after}; job at step {job}"
              + (f" (behind by {job - after})" if job and after else ""))
    print(f"  helper pids counted: {helpers}")
    for n in run.notes:
        print(f"  note: {n}")
    if args.show_screen:
        print("\nlast screen:\n" + last_screen)
    return {"help_idle_ms": ms("idle-before", "open_s", statistics.median), "help_loaded_ms": ms("loaded", "open_s", statistics.median),
            "cpu_idle_quiet": run.cpu["idle-before quiet"][1], "cpu_idle": run.cpu["idle-before"][1], "cpu_loaded": run.cpu["loaded"][1],
            "rss_slope_loaded": slope(loaded) if rss else float("nan"), "caught_ms": caught * 1000 if caught is not None else None,
            "behind_at_end": stats["steps"] - pane_at_end if pane_at_end is not None else None, "rate": n_lines / stats["seconds"],
            "cpu_loaded_quiet": run.cpu["loaded quiet"][1] if "loaded quiet" in run.cpu else None,
            "lag_median_ms": statistics.median(run.lag["cockpit"]) if run.lag.get("cockpit") else None,
            "lag_max_ms": max(run.lag["cockpit"]) if run.lag.get("cockpit") else None,
            "stream_cpu_pct": 100 * run.stream_cpu_s / stats["seconds"] if run.stream_cpu_s is not None else None,
            "tail_lag_median_ms": statistics.median(run.lag["tail -f"]) if run.lag.get("tail -f") else None}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=20.0, help="how long the job streams (default 20)")
    p.add_argument("--rate", type=int, default=10000, help="log lines per second (default 10000)")
    p.add_argument("--warn-every", type=int, default=500, help="a warning line every N lines (0: none; default 500)")
    p.add_argument("--log-lines", type=int, default=10000, help="[ui] log_lines, the ring size (default 10000)")
    p.add_argument("--presses", type=int, default=10, help="help-screen presses per phase (default 10)")
    p.add_argument("--spacing", type=float, default=None, help="seconds between idle presses (default: as far apart as the loaded ones)")
    p.add_argument("--settle", type=float, default=2.0, help="seconds to let the TUI settle before an idle phase (default 2)")
    p.add_argument("--quiet", type=float, default=4.0, help="seconds of CPU measurement without key presses per phase (default 4)")
    p.add_argument("--catchup", type=float, default=10.0, help="deadline for the pane to show the last step (default 10)")
    p.add_argument("--width", type=int, default=160, help="terminal columns (default 160)")
    p.add_argument("--height", type=int, default=45, help="terminal rows (default 45)")
    p.add_argument("--show-screen", action="store_true", help="print the last captured screen")
    p.add_argument("--lag-interval", type=float, default=0.1, help="seconds between lag samples while streaming (default 0.1)")
    p.add_argument("--config-extra", metavar="TOML", default="", help="appended to the target's config (\\n for a newline), "
                   "e.g. '[metrics]\\nbuiltin = false'")
    p.add_argument("--profile", metavar="FILE", help="py-spy record the TUI over the streaming window without presses (collapsed stacks)")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (config, journal, log)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if shutil.which("tmux") is None:
        print("tmux not found", file=sys.stderr)
        return 2
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
