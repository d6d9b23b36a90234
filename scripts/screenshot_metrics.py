#!/usr/bin/env python3
"""Regenerate docs/metrics.svg: the demo's loss curve, the passed attempt over the failed one.

Runs the TUI headless at 120x40 on a fresh demo (in a temporary XDG cache): ``t`` + a hypothesis
(the attempt fails in ``app``; its job is followed until it dies), ``F`` (the shipped fix), ``t``
again (it passes), lets the job train for ``STEPS`` steps, presses ``5`` (the metrics pane in the
GPU pane's place), saves the screen and stops the demo job.

    python scripts/screenshot_metrics.py [OUTPUT.svg]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: how far the passed attempt trains before the picture (0.2 s a step in the demo)
STEPS = 150


async def main(out: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from cockpit.demo import BASELINE_NOTE, FIX_NOTE, demo_config
    from cockpit.ui.app import create_app

    app = create_app(demo_config(), refresh=True)

    async def until(pred, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise SystemExit(f"screenshot: timed out waiting for {what}")
            await pilot.pause(0.1)

    async with app.run_test(size=(120, 40)) as pilot:
        history = app.query_one("HistoryPane")
        eng = app.engine
        for n, note in enumerate((BASELINE_NOTE, FIX_NOTE), start=1):
            if n == 2:
                await until(lambda: eng.follower is None or (eng.follower.last is not None and eng.follower.last.final), 30,
                            "the failed job's end")
                await pilot.press("F")
            await pilot.press("t")
            await until(lambda: type(app.screen).__name__ == "HypothesisScreen", 10, "the prompt")
            app.screen.query_one("#prompt-input").value = note
            await pilot.press("enter")
            await until(lambda n=n: len(history.records) == n and str(history.records[-1].outcome) not in ("running", "Outcome.RUNNING"),
                        60, f"attempt {n}")
        await until(lambda: (m := eng.metrics.get(2)) is not None and m.series["loss"].count >= STEPS, STEPS, f"{STEPS} steps")
        await pilot.press("5")
        await until(lambda: app.query_one("MetricsPane").shown == [1, 2], 10, "both attempts plotted")
        app.clear_notifications()
        await pilot.pause(0.5)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(app.export_screenshot(title="cockpit --demo: metrics [5]"))
        await eng.run_action("stop")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "metrics.svg"
    with tempfile.TemporaryDirectory(prefix="cockpit-shot-") as tmp:
        os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        os.environ["XDG_CONFIG_HOME"] = os.path.join(tmp, "config")
        sys.exit(asyncio.run(main(target.resolve())))
