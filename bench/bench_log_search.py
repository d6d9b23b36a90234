"""Searching a 200,000-line log ring in the TUI: how long the event loop stalls, chunked vs in one go.

The real app (headless, ``App.run_test``) holds ``--lines`` lines of training log (``[ui] log_lines``
as large); each query is applied the way the prompt applies it (``LogPane.apply_search``) twice:

* **in one go** (the baseline, as the filter worked before: every line matched, and for a filter
  re-shown, in one synchronous call on the event loop; ``log_find.SYNC_LIMIT`` raised above the
  ring size);
* **chunked** (what cockpit does above ``SYNC_LIMIT`` lines: ``CHUNK`` lines per step, yielding to
  the event loop once a slice of ``SLICE_S`` of work is done).

A heartbeat task sleeps 1 ms in a loop and records the longest gap between its wake-ups: the
longest time the TUI could not answer a key or repaint.  Also printed: the time until the result
is complete, and the matches.  Both are measured in the same run, on the same lines, twice: with
Python's garbage collector on (what a user gets: a full collection over a process holding a large
ring pauses everything, searching or not) and off (the search's own stall, without the collector's
pauses that land in whichever step happens to run).  The load average is printed: on a busy machine
every figure grows by the share of CPU the process did not get.

Usage: ``python bench/bench_log_search.py [--lines 200000] [--repeat 3] [--gc on|off|both]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cockpit.ui.app import create_app  # noqa: I001
from cockpit.ui.panes import LogPane
from cockpit.ui.panes import log_find
from cockpit.ui.panes.log_search import CHUNK, SLICE_S
from tests.test_ui_support import local_config, make_engine

QUERIES = (
    ("highlight", "cache_size"),            # literal, ignore case: a substring test per line
    ("highlight", "-r loss 2\\.\\d+5 "),     # a regex, ignore case: re.search per line
    ("highlight", "-r -s ^W\\d{4}"),          # a case-sensitive regex anchored at the start
    ("filter", "cache_size"),               # a filter: matched and the view re-shown
    ("filter", "-C 3 -r NaN|cache_size"),    # a filter with context lines
)


def make_lines(n: int) -> list[str]:
    rnd = random.Random(1234)
    out = []
    for i in range(1, n + 1):
        if i % 997 == 0:
            out.append(f"W1202 09:00:{i % 60:02d}.{i:06d} 4242 torch/_dynamo/convert_frame.py:844] hit config.cache_size_limit (8) at step {i}")
        else:
            out.append(f"step {i} | loss {rnd.uniform(1.8, 3.2):.4f} | lr {3e-4 * min(1.0, i / 2000):.3e} | grad_norm {rnd.uniform(0.4, 2.5):.3f} | "
                       f"tokens/s {rnd.randint(118000, 131000)} | mem 61.{rnd.randint(0, 9)}GiB")
    return out


class Heartbeat:
    """The longest gap between wake-ups of a task that sleeps 1 ms: how long the loop was blocked."""

    def __init__(self) -> None:
        self.max_gap = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.max_gap = max(self.max_gap, now - last - 0.001)
            last = now

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def reset(self) -> None:
        self.max_gap = 0.0

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


async def settle(pane: LogPane, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while pane.searching:
        if time.monotonic() > end:
            raise TimeoutError("the search did not finish")
        await asyncio.sleep(0.001)


async def measure(pane: LogPane, beat: Heartbeat, mode: str, text: str, *, chunked: bool) -> tuple[float, float, int]:
    """(longest stall s, time to the complete result s, matches) for one application of the query."""
    log_find.SYNC_LIMIT = 20_000 if chunked else 10**12
    pane.clear_search(resume=True)
    await settle(pane)
    await asyncio.sleep(0.05)  # let the repaint of the cleared view pass before measuring
    beat.reset()
    t0 = time.perf_counter()
    if not pane.apply_search(text, mode):
        raise SystemExit(f"query {text!r} did not parse")
    await settle(pane)
    total = time.perf_counter() - t0
    await asyncio.sleep(0.01)  # the heartbeat's first wake-up after a blocking call records the stall
    return beat.max_gap, total, len(pane.hits)


async def run(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="cockpit-bench-search-"))
    cfg = local_config(tmp, extra=f"log_lines = {args.lines}")
    app = create_app(cfg, engine=make_engine(cfg), refresh=False)
    app.owns_engine = True
    lines = make_lines(args.lines)
    print(f"cockpit log search bench: {args.lines} lines in the ring, chunks of {CHUNK} lines, slices of {SLICE_S * 1000:.0f} ms, "
          f"sync limit {log_find.SYNC_LIMIT}, {args.repeat} runs each; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    tables: dict[str, list[tuple[str, str, dict[bool, list[tuple[float, float, int]]]]]] = {}
    async with app.run_test(size=(160, 45)):
        pane = app.query_one(LogPane)
        pane.history = lambda: (1, lines)
        t0 = time.perf_counter()
        pane.feed("/bench.log", 1, lines, [])
        print(f"filling the view with {args.lines} lines: {(time.perf_counter() - t0) * 1000:.0f} ms (not searched)")
        beat = Heartbeat()
        beat.start()
        try:
            for collector in (("on", "off") if args.gc == "both" else (args.gc,)):
                if collector == "off":
                    gc.collect()
                    gc.disable()
                rows = tables.setdefault(collector, [])
                floor: list[tuple[float, float, int]] = []
                for _ in range(args.repeat):
                    floor.append(await measure_repaint(pane, beat))
                rows.append(("repaint", "(f f: no search at all)", {False: floor, True: floor}))
                for mode, text in (*QUERIES, ("clear", "")):
                    res: dict[bool, list[tuple[float, float, int]]] = {False: [], True: []}
                    for _ in range(args.repeat):
                        for chunked in (False, True):
                            res[chunked].append(await (measure_clear(pane, beat, chunked=chunked) if mode == "clear"
                                                       else measure(pane, beat, mode, text, chunked=chunked)))
                    rows.append((mode, text or "(esc: show all again)", res))
                gc.enable()
        finally:
            gc.enable()
            beat.stop()
            log_find.SYNC_LIMIT = 20_000
    args.tables = tables  # for python -m bench
    for collector, rows in tables.items():
        print()
        print(f"garbage collector {collector}")
        print(f"{'mode':<10}{'query':<26}{'matches':>9}   {'in one go: stall med/max, total':>32}   {'chunked: stall med/max, total':>30}   {'stall':>6}")
        for mode, text, res in rows:
            b_med, c_med = (statistics.median(r[0] for r in res[k]) * 1000 for k in (False, True))
            b_max, c_max = (max(r[0] for r in res[k]) * 1000 for k in (False, True))
            b_tot, c_tot = (statistics.median(r[1] for r in res[k]) * 1000 for k in (False, True))
            hits = res[True][0][2]
            assert hits == res[False][0][2], f"{text}: chunked and in-one-go results differ"
            ratio = f"{b_med / c_med:.1f}x" if c_med > 0 else "—"
            print(f"{mode:<10}{text:<26}{hits:>9}   {b_med:>10.0f} /{b_max:>5.0f} ms, {b_tot:>5.0f} ms   "
                  f"{c_med:>8.0f} /{c_max:>5.0f} ms, {c_tot:>5.0f} ms   {ratio:>6}")
    print("  stall: the longest time the event loop could not turn (a key press or a repaint waited that long);")
    print("  med/max: the median and the largest over the runs; total: until the result is complete (median);")
    print("  the last column: how many times shorter the median stall is when chunked;")
    print("  repaint: the floor, what a plain pause/follow costs the loop here (a repaint of the view), with no search")
    return 0


async def measure_repaint(pane: LogPane, beat: Heartbeat) -> tuple[float, float, int]:
    """The floor: pause and follow again (a scroll and a repaint of the ring's end), no search."""
    pane.clear_search(resume=True)
    await settle(pane)
    await asyncio.sleep(0.05)
    beat.reset()
    t = time.perf_counter()
    pane.toggle_follow()
    await asyncio.sleep(0.03)
    pane.toggle_follow()
    await asyncio.sleep(0.03)
    return beat.max_gap, time.perf_counter() - t, 0


async def measure_clear(pane: LogPane, beat: Heartbeat, *, chunked: bool) -> tuple[float, float, int]:
    """Esc on a filter: every line of the ring shown again."""
    log_find.SYNC_LIMIT = 10**12
    pane.apply_search("cache_size", "filter")
    await settle(pane)
    log_find.SYNC_LIMIT = 20_000 if chunked else 10**12
    await asyncio.sleep(0.05)
    beat.reset()
    t = time.perf_counter()
    pane.clear_search(resume=True)
    await settle(pane)
    total = time.perf_counter() - t
    await asyncio.sleep(0.01)
    return beat.max_gap, total, len(pane.log_view.lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, default=200_000, help="lines in the ring (default 200000)")
    p.add_argument("--repeat", type=int, default=3, help="runs per query and way (default 3)")
    p.add_argument("--gc", choices=("on", "off", "both"), default="both", help="garbage collector during the runs (default both)")
    args = p.parse_args(argv)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
