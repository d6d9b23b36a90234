"""``J`` in the process pane adopts the process on the cursor: it asks first, naming the process,
then the job is cockpit's (journalled as adopted, judged, followed), with a real process started
by hand on the local target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cockpit.ui.panes.procs import ProcsPane
from cockpit.ui.screens import ConfirmScreen
from tests.test_ui_loop import SIZE, make_app
from tests.test_ui_support import wait_for

TRAIN = "import time\nfor i in range(10**6):\n    print(f'step {i} loss 1.0', flush=True)\n    time.sleep(0.2)\n"


async def test_a_process_started_by_hand_is_adopted_from_the_process_pane(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    ws = tmp_path / "ws"
    (ws / "by_hand.py").write_text(TRAIN)
    log = ws / "by-hand.log"
    job = subprocess.Popen(["/bin/sh", "-c", f"exec {sys.executable} -u by_hand.py > {log} 2>&1"], cwd=ws, start_new_session=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            pane = app.query_one(ProcsPane)

            worker = app.refresh_now()

            def listed() -> bool:
                nonlocal worker
                if pane.view is not None and any(p.pid == job.pid for p in pane.view.procs):
                    return True
                if worker.is_finished:  # no refresh loop in this app: one more refresh after each one ends
                    worker = app.refresh_now()
                return False

            await wait_for(pilot, listed, timeout=20, what="the process started by hand in the process pane")
            await wait_for(pilot, lambda: str(job.pid) in [r.key.value for r in pane.table.rows.values()], what="its row")
            await pilot.press("1")
            pane.table.move_cursor(row=pane.table.get_row_index(str(job.pid)))
            await pilot.press("J")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the adopt question")
            assert isinstance(app.screen, ConfirmScreen)
            assert app.screen.title_text == f"Adopt pid {job.pid}?" and "by_hand.py" in app.screen.command
            await pilot.press("y")

            def adopted() -> bool:
                recs = app.engine.journal.attempts()
                return bool(recs) and recs[-1].note == "adopted" and not recs[-1].open

            await wait_for(pilot, adopted, timeout=40, what="the adopted attempt's verdict")
            assert app.engine.job is not None and app.engine.job.pid == job.pid and app.engine.job.adopted
            assert job.poll() is None  # adopting acts on nothing: the job runs on
    finally:
        if job.poll() is None:
            job.kill()
        job.wait()


async def test_T_opens_the_compile_screen_of_the_attempt_and_says_so_when_there_is_no_trace(tmp_path: Path) -> None:
    """``T``: torch.compile's account of an attempt, from its journal record; without a trace, a note."""
    from cockpit.core.compile import parse_text, summarize
    from cockpit.ui.screens.compile import CompileScreen

    trace = next((Path(__file__).parent / "fixtures" / "torch_trace" / "recompile_storm").glob("*.log"))
    events, parser = parse_text(trace.read_bytes())
    summary = summarize(events, parser.malformed)
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        journal = app.engine.journal
        bare = journal.start_attempt("no trace", "lab")
        await pilot.press("T")
        await wait_for(pilot, lambda: any("no torch.compile trace" in n.message for n in app._notifications), what="the note")
        traced = journal.start_attempt("traced", "lab")
        journal.record(traced, "compile", summary=summary.to_dict())
        app.polling.load_history()
        await wait_for(pilot, lambda: traced in [r.attempt for r in journal.attempts()], what="the journal")
        await pilot.press("T")
        await wait_for(pilot, lambda: isinstance(app.screen, CompileScreen), what="the compile screen")
        assert isinstance(app.screen, CompileScreen) and app.screen.attempt == traced and bare != traced
