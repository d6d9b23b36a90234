"""Scrolling back in the log pauses following; ``end`` follows again.

The pane said ``● FOLLOW`` while a person who scrolled up read old lines and the view no longer
moved (Textual's Log scrolls on new lines only from the end); only ``f`` twice brought it back.
"""

from __future__ import annotations

from pathlib import Path

from textual import events

from cockpit.ui.panes import LogPane
from tests.test_ui_app import SIZE, _app_with_log
from tests.test_ui_support import wait_for


async def test_scrolling_back_pauses_following_and_end_follows_again(tmp_path: Path) -> None:
    app = await _app_with_log(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        refresh = app.refresh_now()
        await wait_for(pilot, lambda: pane.last_no >= 60, what="the log")
        await refresh.wait()
        view = pane.log_view
        view.focus()
        await pilot.pause()
        assert pane.following and "FOLLOW" in pane._title_text.plain
        for key, following in (("up", False), ("end", True), ("pageup", False), ("end", True), ("home", False), ("end", True)):
            await pilot.press(key)
            assert pane.following is following and view.auto_scroll is following, key
            assert ("● FOLLOW" if following else "⏸ PAUSED") in pane._title_text.plain, key
        assert view.scroll_y == view.max_scroll_y  # following again: at the newest line
        view.post_message(events.MouseScrollUp(view, 1, 1, 0, 0, 0, False, False, False))  # the wheel, upwards
        await wait_for(pilot, lambda: not pane.following, what="the wheel pauses following")
