"""A passed attempt whose job then dies is news in the TUI: the attempts pane shows the fate, a
toast says it, the bell rings (issue 9)."""

from __future__ import annotations

from pathlib import Path

from cockpit.core.events import FateChanged
from cockpit.core.fate import Fate
from cockpit.core.journal import Journal
from cockpit.core.layers import Outcome
from tests.test_ui_loop import SIZE, make_app
from tests.test_ui_support import wait_for


async def test_a_fate_change_reaches_the_attempts_pane_a_toast_and_the_bell(tmp_path: Path):
    app = make_app(tmp_path)
    app.cfg.loop.bell = True
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    j = Journal(app.cfg.journal_path)
    a = j.start_attempt("passes, then dies", "lab")
    j.finish_attempt(a, Outcome.PASSED)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one("#history-table")
        await wait_for(pilot, lambda: table.row_count == 1, what="the attempt")
        fate = Fate("died", "app", "exited with code 1: RuntimeError: loss is NaN", 1.0, 252.0, "step 90")
        j.record(a, "fate", **fate.to_dict())
        app.engine.publish(FateChanged(a, fate, "passed"))
        await wait_for(pilot, lambda: "died app 4m12s" in table.get_row(str(a))[3].plain, what="the fate in the THEN column")
        await wait_for(pilot, lambda: bells == [1], what="the bell")
        assert any("passed → died (app) after 4m12s: exited with code 1: RuntimeError" in n.message for n in app._notifications)


def test_every_fate_state_has_its_own_glyph():
    """A queued Slurm job's fate is ``pending``: it must not show as the unknown-state dot."""
    from cockpit.core.fate import FATE_STATES
    from cockpit.ui.panes.history import FATE_GLYPH

    assert set(FATE_STATES) <= set(FATE_GLYPH), set(FATE_STATES) - set(FATE_GLYPH)
    assert len(set(FATE_GLYPH.values())) == len(FATE_GLYPH)  # each tells its state apart
