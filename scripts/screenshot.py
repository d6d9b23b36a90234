#!/usr/bin/env python3
"""Regenerate docs/screenshot.svg: the demo through the whole loop, as a newcomer sees it.

Runs the TUI headless at 120x40 on a fresh demo (in a temporary XDG cache), presses the keys a
person would: ``t`` + a hypothesis (the attempt fails in ``app``: the FX race), ``F`` (apply the
demo's shipped fix), ``t`` + the fix's hypothesis (the attempt passes), then saves the screen and
stops the demo job.

    python scripts/screenshot.py [OUTPUT.svg]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
            await pilot.pause(0.05)

    async with app.run_test(size=(120, 40)) as pilot:
        history = app.query_one("HistoryPane")
        for n, note in enumerate((BASELINE_NOTE, FIX_NOTE), start=1):
            if n == 2:
                await pilot.press("F")  # apply the shipped fix to the working copy
            await pilot.press("t")
            await until(lambda: type(app.screen).__name__ == "HypothesisScreen", 10, "the prompt")
            app.screen.query_one("#prompt-input").value = note
            await pilot.press("enter")
            await until(lambda n=n: len(history.records) == n and str(history.records[-1].outcome) not in ("running", "Outcome.RUNNING"),
                        60, f"attempt {n}")
        log = app.query_one("LogPane")
        await until(lambda: log.last_no >= 20, 20, "training steps in the log")
        await until(lambda: all(p.view is not None for p in app.query("ProcsPane, GpuPane")), 10, "processes and GPUs")
        app.clear_notifications()
        await pilot.pause(0.3)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(app.export_screenshot(title="cockpit --demo"))
        outcomes = [str(getattr(r.outcome, "value", r.outcome)) for r in history.records]
        await app.engine.run_action("stop")  # the passing job trains until stopped
    print(f"wrote {out} (attempts: {', '.join(outcomes)})")
    return 0


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshot.svg"
    with tempfile.TemporaryDirectory(prefix="cockpit-shot-") as tmp:
        os.environ["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
        os.environ["XDG_CONFIG_HOME"] = os.path.join(tmp, "config")
        sys.exit(asyncio.run(main(target.resolve())))
