"""Remote and journal text is data, never markup (issue 10, the part that crashed the TUI on every
start): notes, errors, summaries and fates with square brackets show verbatim in the attempts pane
and in the verdict detail."""

from __future__ import annotations

from pathlib import Path

from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome
from cockpit.ui.screens.verdict import VerdictScreen
from tests.test_ui_loop import SIZE, make_app
from tests.test_ui_support import wait_for

HOSTILE = "try [fix] [/] [rank0]: RuntimeError [bold]x[/bold] [/tmp] [link=http://x]y[/link]"


async def test_square_brackets_from_the_journal_show_verbatim(tmp_path: Path):
    app = make_app(tmp_path)
    j = Journal(app.cfg.journal_path)
    a = j.start_attempt(HOSTILE, "lab", log_path="/tmp/[/]/train-1.log")
    j.record(a, "fate", state="died", layer="app", cause=HOSTILE, at=1.0, after_s=3.0, last_progress="[step 1]")
    j.finish_attempt(a, Outcome.FAILED, layer=Layer.APP, summary=f"attempt: {HOSTILE}",
                     first_error={"label": HOSTILE, "layer": "app", "line": HOSTILE})
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one("#history-table")
        await wait_for(pilot, lambda: table.row_count == 1, what="the hostile row")
        row = [c.plain if hasattr(c, "plain") else str(c) for c in table.get_row("1")]
        assert any(HOSTILE[:40] in c for c in row), row
        await pilot.press("4", "v")
        await wait_for(pilot, lambda: isinstance(app.screen, VerdictScreen), what="the verdict detail")
        await pilot.pause()
        shown = app.screen.body.build()
        from rich.console import Console

        console = Console(width=400, record=True)
        console.print(shown)
        text = console.export_text()
        assert HOSTILE in text and "/tmp/[/]/train-1.log" in text, text[:2000]
