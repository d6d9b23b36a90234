"""The log pane's border title is set only when it changes: a batch of plain lines leaves it (and
the whole pane's repaint that each set costs) alone; an error or a pause changes it."""

from __future__ import annotations

from cockpit.ui.panes import LogPane
from tests.test_ui_search import SIZE, append, loaded, log_app, step_lines


async def test_a_batch_of_plain_lines_keeps_the_title(tmp_path) -> None:
    app, log = log_app(tmp_path, step_lines(1, 50, hits=()))
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 50)
        title = pane._border_title
        assert title is not None and "FOLLOW" in title.plain
        await append(app, pilot, log, step_lines(51, 120, hits=()), 120)
        assert app.query_one(LogPane)._border_title is title  # not set again: no repaint of the pane for it
        pane.toggle_follow()
        assert pane._border_title is not title and "PAUSED" in pane._border_title.plain
        paused = pane._border_title
        await append(app, pilot, log, ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                                       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"], 123)
        await pilot.pause()
        assert pane._border_title is not paused and "1 error" in pane._border_title.plain
