"""Soak: the real TUI for N minutes with a streaming job and modal churn; RSS and CPU every minute.

``python -m bench soak --minutes 120`` (or ``python bench/soak.py --minutes 120``).  The ``cockpit``
TUI runs in a detached tmux server (``bench/tui_target.py``) against a local target whose job
writes ``--rate`` training-log lines per second for the whole soak.  The soak starts the attempt
as a person does (``t``, a hypothesis, Enter), then, every ``--churn-every`` seconds, opens and
closes one modal in turn: help (``?``), the hypothesis prompt (``t``), the stop confirmation
(``S``, answered with Escape: nothing is stopped) and the verdict (``v``).  Not the threads'
stacks (``w``): each dump is saved with the attempt in the journal, data that grows by design.

Every ``--every`` seconds it prints: minutes, RSS of the cockpit process, its change since the
first report (the TUI warm by then), CPU % of the TUI and of its helpers (the local session shell
and its probes; the job excluded) over that interval, the modal cycles so far, and how far the
log pane is behind the job.  At the end: RSS growth from warm to last, its slope, CPU mean.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.tui_target import (  # noqa: E402
    CLK_TCK,
    HELP_MARK,
    PROMPT_MARK,
    READY_MARK,
    STEP_RE,
    Deadline,
    Tmux,
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

#: the modal keys, in turn, and what shows on screen while each is open
CHURN: tuple[tuple[str, str], ...] = (
    ("?", HELP_MARK),
    ("t", PROMPT_MARK),
    ("S", "Cancel (esc)"),
    ("v", "esc: close"),
)


@dataclass
class Report:
    minute: float
    rss_mib: float
    cpu_pct: float
    helpers_pct: float
    cycles: int
    behind: int | None


def job_step(log_path: Path) -> int | None:
    try:
        with open(log_path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 65536))
            tail = fh.read().decode(errors="replace")
    except OSError:
        return None
    steps = STEP_RE.findall(tail)
    return int(steps[-1]) if steps else None


def helper_ticks(tui: int, gen_marker: str) -> int:
    """CPU ticks of the TUI's descendants that are not the job (whose command has ``gen_marker``)."""
    total = 0
    for pid in descendants(tui):
        if gen_marker in cmdline(pid):
            continue
        total += cpu_ticks(pid, children=False) or 0
    return total


def modal_cycle(tmux: Tmux, key: str, mark: str, timeout: float = 8.0) -> bool:
    """Open one modal with ``key``, close it with Escape; False when it did not show (e.g. the
    prompt while an attempt runs).  A modal still open after a minute and two Escapes ends the soak."""
    tmux.keys(key)
    try:
        wait_for(lambda: mark in tmux.capture(), timeout, f"the modal of {key!r}", interval=0.05)
    except Deadline:
        return False
    tmux.keys("Escape")
    try:
        wait_for(lambda: mark not in tmux.capture(), 30, f"the modal of {key!r} to close", interval=0.05)
    except Deadline:  # a slow machine: one more Escape
        tmux.keys("Escape")
        wait_for(lambda: mark not in tmux.capture(), 30, f"the modal of {key!r} to close", interval=0.05)
    return True


def soak(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="cockpit-soak-"))
    ns = argparse.Namespace(rate=args.rate, seconds=args.minutes * 60 + 600, warn_every=args.warn_every, log_lines=args.log_lines)
    cfg, log_path, _stats, gen_marker = write_target(root, ns)
    check_config(cfg)
    tmux, env, tui, term = start_tui(root, cfg, args.width, args.height, sock_prefix="soak")
    print(f"cockpit soak: {args.minutes:g} min, job {args.rate} lines/s, a modal every {args.churn_every:g}s, "
          f"tmux {args.width}x{args.height} (TERM={term}), {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, dir {root}", flush=True)
    reports: list[Report] = []
    try:
        wait_for(lambda: READY_MARK in tmux.capture(), 60, "the TUI to draw its log pane")
        tmux.keys("t")
        wait_for(lambda: PROMPT_MARK in tmux.capture(), 30, "the hypothesis prompt")
        tmux.keys("C-u")
        tmux.keys("soak: memory stays flat", literal=True)
        tmux.keys("Enter")
        wait_for(lambda: job_step(log_path), 120, "the job's first step line in its log")
        wait_for(lambda: PROMPT_MARK not in tmux.capture() and pane_step(tmux.capture()), 60, "the first step in the log pane")
        print(f"{'min':>6} {'RSS MiB':>8} {'Δ warm':>8} {'CPU %':>6} {'helpers %':>9} {'modals':>7} {'pane behind (steps)':>20}", flush=True)
        t0 = last_t = time.monotonic()
        last_c, last_h = cpu_ticks(tui) or 0, helper_ticks(tui, gen_marker)
        cycles, turn = 0, 0
        next_report = t0 + args.every
        end = t0 + args.minutes * 60
        while True:
            now = time.monotonic()
            if now >= next_report or now >= end:
                c, h = cpu_ticks(tui), helper_ticks(tui, gen_marker)
                if c is None:
                    raise Deadline("the TUI exited")
                wall = now - last_t
                js, ps = job_step(log_path), pane_step(tmux.capture())
                rep = Report((now - t0) / 60, (rss_kib(tui) or 0) / 1024, 100 * (c - last_c) / CLK_TCK / wall,
                             100 * max(0, h - last_h) / CLK_TCK / wall, cycles, js - ps if js is not None and ps is not None else None)
                reports.append(rep)
                warm = reports[0].rss_mib
                print(f"{rep.minute:>6.1f} {rep.rss_mib:>8.1f} {rep.rss_mib - warm:>+8.1f} {rep.cpu_pct:>6.1f} {rep.helpers_pct:>9.1f} "
                      f"{rep.cycles:>7} {'' if rep.behind is None else rep.behind:>20}", flush=True)
                last_t, last_c, last_h = now, c, h
                next_report += args.every
                if now >= end:
                    break
            key, mark = CHURN[turn % len(CHURN)]
            turn += 1
            if modal_cycle(tmux, key, mark):
                cycles += 1
            time.sleep(args.churn_every)  # pacing of the churn, not a wait for a condition
        summary(reports, args)
        return 0
    except Deadline as e:
        print(f"\nFAILED: {e}\n--- screen ---\n{tmux.capture()}", flush=True)
        return 1
    finally:
        cleanup(tmux, cfg, env, root, tui, gen_marker, keep=args.keep)


def summary(reports: list[Report], args: argparse.Namespace) -> None:
    if len(reports) < 2:
        print("too short for a trend: run at least two report intervals")
        return
    warm, last = reports[0], reports[-1]
    pts = [(r.minute * 60, r.rss_mib) for r in reports]
    print(f"\nRSS: warm {warm.rss_mib:.1f} MiB (first report) → last {last.rss_mib:.1f} MiB: {last.rss_mib - warm.rss_mib:+.1f} MiB over "
          f"{last.minute - warm.minute:.1f} min ({slope(pts) * 3600:+.1f} MiB/h), max {max(r.rss_mib for r in reports):.1f} MiB; "
          f"{last.cycles} modal cycles")
    print(f"CPU: TUI mean {statistics.fmean(r.cpu_pct for r in reports[1:]):.1f} %, helpers mean "
          f"{statistics.fmean(r.helpers_pct for r in reports[1:]):.1f} % (job excluded)")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench soak", description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=120.0, help="how long to run (default 120)")
    p.add_argument("--rate", type=int, default=200, help="job log lines per second (default 200; ~100 MiB of log an hour)")
    p.add_argument("--warn-every", type=int, default=500, help="a warning line every N lines (default 500)")
    p.add_argument("--log-lines", type=int, default=10000, help="[ui] log_lines, the ring size (default 10000)")
    p.add_argument("--churn-every", type=float, default=2.0, help="seconds between modal cycles (default 2)")
    p.add_argument("--every", type=float, default=60.0, help="seconds between reports (default 60)")
    p.add_argument("--width", type=int, default=160, help="terminal columns (default 160)")
    p.add_argument("--height", type=int, default=45, help="terminal rows (default 45)")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (config, journal, log)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.minutes <= 0 or args.every <= 0:
        print("--minutes and --every must be positive", file=sys.stderr)
        return 2
    if shutil.which("tmux") is None:
        print("tmux not found: the soak drives the TUI in tmux", file=sys.stderr)
        return 2
    return soak(args)


if __name__ == "__main__":
    sys.exit(main())
