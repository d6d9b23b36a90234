"""The TUI asks before it stops copies of the job that cockpit did not start ([job] strays = "ask")."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cockpit.ui.screens import ConfirmScreen, HypothesisScreen
from tests.test_ui_loop import SIZE, make_app, watching
from tests.test_ui_support import wait_for


async def test_a_stray_is_shown_and_stopped_only_when_the_user_says_yes(tmp_path: Path):
    # the job (and so the stray) sleeps long enough to outlive the attempt's strays stage on a loaded machine
    app = make_app(tmp_path, sleep=120)
    ws = tmp_path / "ws"
    (ws / "train.py").write_text("print('step 1')\n")
    # the same command line in the same workdir, started by hand: a stray
    stray = subprocess.Popen(["/bin/sh", "-c", app.cfg.job.command], cwd=ws, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await watching(pilot, app)
            await pilot.press("t")
            await wait_for(pilot, lambda: isinstance(app.screen, HypothesisScreen), what="the prompt")
            await pilot.press(*"with a stray", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), timeout=30, what="the strays question")
            assert "1 copy of the job that cockpit did not start" in app.screen.body and f"pid {stray.pid}" in app.screen.body
            await pilot.press("y")
            await wait_for(pilot, lambda: stray.poll() is not None, timeout=20, what="the stray to be stopped")
            await wait_for(pilot, lambda: bool(app.engine.journal.attempts()) and not app.engine.journal.attempts()[-1].open,
                           timeout=30, what="the attempt's verdict")
            rec = app.engine.journal.attempts()[-1]
            strays = [s for s in rec.stages if s.stage.name == "strays"]
            assert strays and strays[0].stage.detail.startswith("stopped 1 copy"), [s.stage.detail for s in strays]
            await app.engine.run_action("stop", wait=True)
    finally:
        if stray.poll() is None:
            stray.kill()
        stray.wait()
