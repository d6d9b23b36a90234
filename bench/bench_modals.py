"""Modal churn: RSS and CPU of opening and closing the TUI's modal screens, 1,000 times.

The demo app (no polling, so only the modals move) runs under a Textual pilot at 160x45 in a
fresh interpreter; ``--warm`` cycles first (each screen's first open fills class-level caches),
then ``--cycles`` cycles round-robin over every modal (help, confirm, prompt, verdict, stacks,
output; see ``bench/modal_churn.py``), each opened by its key's action and closed with Escape.
Baseline, measured in the same run in its own interpreter: a bare Textual app (a stock
``Footer`` and one small modal screen), the same number of cycles: what Textual itself costs.

Prints RSS before/after (after ``gc.collect()``), the growth per cycle, CPU per cycle and the
live widgets before/after; then, per modal the speed goal names (help, confirm, prompt, verdict),
the CPU of its very first open+close (before any warm-up) and of a reopen (``--per-kind`` cycles
of that modal alone, after the churn).
Usage: ``python bench/bench_modals.py [--cycles 1000] [--warm 60] [--per-kind 20]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import Row  # noqa: E402


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


#: the modals the speed goal names: help, the relaunch confirmation, the hypothesis prompt, the verdict
GOAL_KINDS = ("help", "confirm", "prompt", "verdict")


async def _child(kind: str, cycles: int, warm: int, size: tuple[int, int], per_kind: int = 0) -> dict[str, Any]:
    import gc

    from bench.modal_churn import churn, live_counts, until

    out: dict[str, Any] = {}
    if kind == "cockpit":
        from cockpit.demo import demo_config
        from cockpit.ui.app import create_app

        app: Any = create_app(demo_config(), refresh=False)

        async def run(pilot: Any, n: int) -> None:
            await churn(app, pilot, n)

        async def first_and_each(pilot: Any) -> None:
            """The first open+close of each goal modal (class-level caches cold), then each kind alone."""
            for kind in GOAL_KINDS:
                c = time.process_time()
                await churn(app, pilot, 1, (kind,))
                out.setdefault("first_ms", {})[kind] = (time.process_time() - c) * 1000
    else:
        from textual.app import App, ComposeResult
        from textual.containers import Vertical
        from textual.screen import ModalScreen
        from textual.widgets import Button, Footer, Static

        class Modal(ModalScreen[None]):
            BINDINGS = [("escape", "app.pop_screen", "Close")]

            def compose(self) -> ComposeResult:
                with Vertical(classes="modal-box"):
                    yield Static("a modal screen")
                    yield Button("Cancel")

        class Bare(App[None]):
            BINDINGS = [(k, "bell", f"key {k}") for k in "abcdefgh"]

            def compose(self) -> ComposeResult:
                yield Static("main screen")
                yield Footer(compact=True)

        app = Bare()

        async def run(pilot: Any, n: int) -> None:
            for _ in range(n):
                app.push_screen(Modal())
                await until(pilot, lambda: bool(app.screen.query(".modal-box")), "the modal")
                await pilot.press("escape")
                await until(pilot, lambda: len(app.screen_stack) == 1, "the modal to close")

    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if kind == "cockpit":
            await first_and_each(pilot)
        await run(pilot, warm)
        gc.collect()
        out["counts0"], out["rss0"] = dict(live_counts()), rss_mib()
        t, c = time.monotonic(), time.process_time()
        await run(pilot, cycles)
        out["wall_s"], out["cpu_s"] = time.monotonic() - t, time.process_time() - c
        gc.collect()
        out["counts1"], out["rss1"] = dict(live_counts()), rss_mib()
        if kind == "cockpit" and per_kind:
            for k in GOAL_KINDS:  # warm now: what each costs on a reopen
                c = time.process_time()
                await churn(app, pilot, per_kind, (k,))
                out.setdefault("each_ms", {})[k] = (time.process_time() - c) * 1000 / per_kind
    return out


def measure(kind: str, cycles: int, warm: int, size: tuple[int, int], per_kind: int = 0) -> dict[str, Any]:
    """One side in a fresh interpreter (RSS is per process; the workarounds patch Textual's classes)."""
    with tempfile.TemporaryDirectory(prefix="cockpit-bench-modals-") as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=f"{tmp}/cache", XDG_CONFIG_HOME=f"{tmp}/config",
                   PYTHONPATH=str(REPO) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
        p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", kind, "--cycles", str(cycles), "--warm", str(warm),
                            "--size", f"{size[0]}x{size[1]}", "--per-kind", str(per_kind)], capture_output=True, text=True, env=env, cwd=str(REPO), check=False)
    if p.returncode != 0:
        raise RuntimeError(f"modal churn ({kind}) failed, exit {p.returncode}:\n{p.stderr[-3000:]}")
    return dict(json.loads(p.stdout.strip().splitlines()[-1]))


def main(cycles: int, warm: int, size: tuple[int, int], per_kind: int = 0) -> dict[str, dict[str, Any]]:
    """Prints the figures; answers each side's measurement (``bare`` first, then ``cockpit``)."""
    res = {kind: measure(kind, cycles, warm, size, per_kind) for kind in ("bare", "cockpit")}
    print(f"modal churn: {cycles} open/close cycles after {warm} warm ones, {size[0]}x{size[1]}, "
          f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"{'':<40}{'RSS before':>11}{'after':>9}{'growth':>9}{'per cycle':>11}{'CPU/cycle':>11}{'widgets':>13}")
    names = {"bare": "baseline: bare Textual app, stock Footer", "cockpit": "cockpit demo, every modal"}
    for kind, r in res.items():
        growth = r["rss1"] - r["rss0"]
        w0, w1 = r["counts0"].get("widgets", 0), r["counts1"].get("widgets", 0)
        print(f"{names[kind]:<40}{r['rss0']:>8.1f} MiB{r['rss1']:>6.1f} MiB{growth:>+6.1f} MiB{growth * 1024 / cycles:>+7.1f} KiB"
              f"{r['cpu_s'] * 1000 / cycles:>8.1f} ms{w0:>6} → {w1:<5}")
    c = res["cockpit"]
    print(f"CPU per open+close, {size[0]}x{size[1]}: {'first open':>12}{'reopened':>10}   (goal: < 100 ms reopened, first < 1 s)")
    for k in GOAL_KINDS:
        each = c.get("each_ms", {}).get(k)
        print(f"  {k:<38}{c['first_ms'][k]:>9.0f} ms{'' if each is None else f'{each:>7.0f} ms'}")
    return res


def rows(quick: bool) -> list[Row]:
    cycles, warm = (6, 6) if quick else (1000, 60)  # quick: each modal once to warm, once measured
    res = main(cycles, warm, (160, 45), per_kind=3 if quick else 20)
    b, c = res["bare"], res["cockpit"]
    each = [Row("modals", f"  {k}: CPU per open+close, reopened (first open {c['first_ms'][k]:.0f} ms)", c["each_ms"][k], "ms",
                b["cpu_s"] * 1000 / cycles, "bare Textual app, one small modal") for k in GOAL_KINDS]
    return [
        Row("modals", f"RSS growth, {cycles} modal open/close cycles", c["rss1"] - c["rss0"], "MiB",
            b["rss1"] - b["rss0"], "bare Textual app + stock Footer"),
        Row("modals", f"widgets left alive by {cycles} cycles", c["counts1"].get("widgets", 0) - c["counts0"].get("widgets", 0), "",
            b["counts1"].get("widgets", 0) - b["counts0"].get("widgets", 0), "bare Textual app + stock Footer"),
        Row("modals", "CPU per modal open+close (160x45)", c["cpu_s"] * 1000 / cycles, "ms",
            b["cpu_s"] * 1000 / cycles, "bare Textual app, one small modal"),
        *each,
    ]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--warm", type=int, default=60)
    ap.add_argument("--size", default="160x45", help="terminal size, COLSxROWS (default 160x45)")
    ap.add_argument("--per-kind", type=int, default=20, help="then this many cycles of each goal modal alone (default 20; 0: none)")
    ap.add_argument("--child", choices=("bare", "cockpit"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.lower().split("x"))
    if a.child:
        print(json.dumps(asyncio.run(_child(a.child, a.cycles, a.warm, (w, h), a.per_kind))), flush=True)
        os._exit(0)  # the demo engine's local session is not worth a clean shutdown here
    main(a.cycles, a.warm, (w, h), a.per_kind)
