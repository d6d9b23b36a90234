"""A log that says ● FOLLOW shows the newest lines after its layout changes: zooming the log and back,
a smaller terminal, a terminal resized while a modal is open.  Textual's Log scrolls on new lines
only when the view sat at the end before them, and a pane that shrinks leaves the view above the
end, so the title said FOLLOW over lines that no longer moved (pilot tests, a real file read
through the local transport)."""

from __future__ import annotations

from typing import Any

from cockpit.ui.panes import LogPane
from cockpit.ui.screens import ConfirmScreen
from tests.test_ui_search import SIZE, append, loaded, log_app, step_lines
from tests.test_ui_support import wait_for


def newest_shown(pane: LogPane) -> bool:
    view = pane.log_view
    return view.max_scroll_y > 0 and view.scroll_offset.y == view.max_scroll_y


async def more_lines_follow(app: Any, pilot: Any, log: Any, pane: LogPane, first: int, last: int) -> None:
    await append(app, pilot, log, step_lines(first, last, hits=()), last)
    assert pane.following and "FOLLOW" in pane._border_title.plain
    await wait_for(pilot, lambda: newest_shown(pane), what=f"line {last} on screen while the title says FOLLOW")


async def test_zoom_and_back_keeps_following(tmp_path) -> None:
    app, log = log_app(tmp_path, step_lines(1, 200, hits=()))
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 200)
        await pilot.press("2", "z")
        await wait_for(pilot, lambda: app.screen.maximized is pane, what="the zoomed log")
        await more_lines_follow(app, pilot, log, pane, 201, 260)
        await pilot.press("z")
        await wait_for(pilot, lambda: app.screen.maximized is None, what="the zoom to end")
        await more_lines_follow(app, pilot, log, pane, 261, 300)


async def test_a_smaller_terminal_under_a_modal_keeps_following(tmp_path) -> None:
    app, log = log_app(tmp_path, step_lines(1, 200, hits=()))
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 200)
        app.push_screen(ConfirmScreen("Stop the job?", "body", "kill -s TERM -- -352"))
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the modal")
        await pilot.resize_terminal(80, 24)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the modal to close")
        await more_lines_follow(app, pilot, log, pane, 201, 260)
