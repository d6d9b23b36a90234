"""A confirmation on a short terminal (80x24, or one resized while it is open) keeps its buttons,
and so the keys that answer it, on screen, and every line of the command it would run can be
scrolled to: the stop command (TERM, then KILL) is taller than the dialog there, and the box cut the
KILL half and both buttons off with nothing saying so (pilot tests)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Button

from cockpit.ui.screens import ConfirmScreen
from tests.test_ui_search import SIZE, log_app, step_lines
from tests.test_ui_support import wait_for

COMMAND = "\n".join(f"kill -s TERM -- -352  # part {i} " + "x" * 50 for i in range(16)) + "\n# after 10s: kill -s KILL -- -352"


def on_screen(app: Any, selector: str) -> bool:
    found = app.screen.query(selector)
    if not found or not app.screen.query("#confirm-box"):
        return False  # not composed yet
    w, box = found.first(), app.screen.query_one("#confirm-box").content_region
    return bool(w.region) and box.contains_region(w.region) and app.screen.region.contains_region(w.region)


async def open_confirm(app: Any, pilot: Any) -> None:
    app.push_screen(ConfirmScreen("Stop the job?", "Stops the job cockpit launched. " * 6, COMMAND, where="over SSH on root@h"),
                    lambda ok: setattr(app, "answer", ok))
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")


async def test_buttons_stay_on_screen_and_the_last_line_can_be_reached_at_80x24(tmp_path) -> None:
    app, _ = log_app(tmp_path, step_lines(1, 5, hits=()))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_confirm(app, pilot)
        await wait_for(pilot, lambda: on_screen(app, "#confirm-no") and on_screen(app, "#confirm-ok"),
                       what="both buttons inside the dialog, on screen")
        assert app.screen.query_one("#confirm-ok", Button).label.plain == "Yes (y)"
        assert app.screen.focused is app.screen.query_one("#confirm-no")  # Enter alone still cancels
        box = app.screen.query_one("#confirm-box")
        assert box.max_scroll_y > 0  # taller than the dialog: it scrolls, with its scrollbar showing that
        await pilot.press("end")
        await wait_for(pilot, lambda: box.scroll_offset.y == box.max_scroll_y, what="the end of the command")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the dialog to close")
        assert app.answer is False


async def test_a_terminal_made_smaller_under_the_dialog_keeps_its_buttons(tmp_path) -> None:
    app, _ = log_app(tmp_path, step_lines(1, 5, hits=()))
    async with app.run_test(size=SIZE) as pilot:
        await open_confirm(app, pilot)
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: app.screen.size.height == 24 and on_screen(app, "#confirm-ok"),
                       what="the buttons on the smaller screen")
        await pilot.press("y")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the dialog to close")
        assert app.answer is True
