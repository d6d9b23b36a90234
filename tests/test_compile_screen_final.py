"""T on a finished attempt shows its final compile summary, not a "live" one (cockpit/ui/views.py)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from tests.test_compile_screen import summary
from tests.test_ui_support import story_app, wait_for


def title(screen: object) -> str:
    r = screen.query_one("#compile-title", Static).render()  # type: ignore[attr-defined]
    return r.plain if isinstance(r, Text) else str(r)


async def test_T_on_a_finished_attempt_shows_the_final_summary(tmp_path: Path) -> None:
    from cockpit.ui.screens.compile import CompileScreen

    app = story_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        eng = app.engine
        n = eng.job_attempt if eng.job_attempt is not None else eng.journal.attempts()[-1].attempt  # what T shows
        # the summary CompileUpdated(final=True) left behind: the attempt's trace is no longer followed
        eng.compile.summaries[n] = summary("recompile_storm")
        assert n not in eng.compile.followers
        await pilot.press("T")
        await wait_for(pilot, lambda: isinstance(app.screen, CompileScreen), what="the compile screen")
        screen = app.screen
        assert isinstance(screen, CompileScreen) and screen.attempt == n and screen.final
        assert f"attempt {n}" in title(screen) and "live" not in title(screen)
