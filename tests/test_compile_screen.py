"""The torch.compile screen (cockpit/ui/screens/compile.py) in a real Textual app, driven by the pilot:
one row per frame of a recorded trace, the selected frame's reasons, alerts in colour, live updates."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import App
from textual.widgets import DataTable, Static

from cockpit.core.compile import CompileSummary, CompileTracker
from cockpit.ui.screens.compile import CompileScreen, alerts_text

FIXTURES = Path(__file__).parent / "fixtures" / "torch_trace"


def summary(case: str, upto: int | None = None) -> CompileSummary:
    t = CompileTracker()
    for f in sorted((FIXTURES / case).glob("dedicated_log_torch_trace_*.log")):
        data = f.read_bytes()
        t.feed(data if upto is None else data[:upto], f.name)
    t.close()
    return t.summary()


def plain(screen: CompileScreen, wid: str) -> str:
    r = screen.query_one(wid, Static).render()
    return r.plain if isinstance(r, Text) else str(r)


async def test_frames_reasons_alerts_and_live_updates() -> None:
    s = summary("graph_break")
    app: App[None] = App()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = CompileScreen(s, attempt=3)
        await app.push_screen(screen)
        await pilot.pause()
        table = screen.query_one("#compile-frames", DataTable)
        assert table.row_count == 3
        assert [table.get_row_at(i)[1] for i in range(3)] == ["branchy", "torch_dynamo_resume_in_branchy_at_13", "strict"]
        assert "attempt 3" in plain(screen, "#compile-title") and "live" in plain(screen, "#compile-title")
        assert plain(screen, "#compile-totals").startswith("compiled 3 frames, 1 graph break, 1 failed compile")
        assert "graph breaks:" in plain(screen, "#compile-detail")  # the first frame, selected
        await pilot.press("down", "down")
        detail = plain(screen, "#compile-detail")
        assert detail.startswith("strict") and "failures:" in detail and "UserError" in detail
        alerts = alerts_text(s)
        assert "error: strict (2/0) failed: UserError" in alerts.plain
        assert any(span.style == "bold red" for span in alerts.spans)
        # a newer summary of the same attempt: rows replaced, the selected frame kept
        storm = summary("recompile_storm")
        screen.show(storm, final=True)
        await pilot.pause()
        assert table.row_count == 1 and table.get_row_at(0)[1] == "grow" and table.get_row_at(0)[9] == "limit hit"
        assert "recompile reasons:" in plain(screen, "#compile-detail") and "live" not in plain(screen, "#compile-title")
        assert "mark_dynamic" in plain(screen, "#compile-alerts")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is not screen


async def test_an_empty_summary_and_hostile_names_render_as_text() -> None:
    s = summary("cache_cold")
    s.frames[0].function = "[bold red]evil[/]\x1b[31m"
    app: App[None] = App()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = CompileScreen(CompileSummary())
        await app.push_screen(screen)
        await pilot.pause()
        assert "no compile yet" in plain(screen, "#compile-totals") and "no frame compiled yet" in plain(screen, "#compile-detail")
        screen.show(s)
        await pilot.pause()
        assert plain(screen, "#compile-detail").startswith("[bold red]evil[/]")  # shown as text, the escape gone
        assert "\x1b" not in plain(screen, "#compile-detail")
        assert "cache_cold" not in plain(screen, "#compile-alerts") and "compile caches cold" in plain(screen, "#compile-alerts")
