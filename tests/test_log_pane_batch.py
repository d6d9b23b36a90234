"""The log pane takes a batch at once: lines already shown are not shown twice, a file line is one
row whatever it holds, and the widest line (the horizontal scroll) is measured as Textual would."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len

from tests.test_ui_search import SIZE, loaded, log_app, step_lines


async def test_batches_overlap_wide_lines_and_one_row_per_line(tmp_path: Path) -> None:
    app, _log = log_app(tmp_path, step_lines(1, 30, hits=()))
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 30)
        view = pane.log_view
        assert list(view.numbers) == list(range(1, 31))
        plain_width = view.virtual_size.width
        assert plain_width == max(len(t) for t in step_lines(1, 30, hits=()))

        # a batch that repeats lines 25..30 (a history refill) and brings 31..34
        wide = "日本語のログ " * 12  # two cells a character
        batch = [*step_lines(25, 30, hits=()), "x\ty", wide, "a\u2028b\rc", "step 34 | loss 1.0"]
        pane.feed(pane.path, 25, batch, [], pane.view)
        await pilot.pause()
        assert list(view.numbers) == list(range(1, 35))  # 25..30 not shown twice
        assert view.lines[-4:] == ["x\ty", wide, "a b c", "step 34 | loss 1.0"]  # one row each
        assert view.virtual_size.width == max(plain_width, cell_len(wide))

        # a batch wholly shown already changes nothing
        pane.feed(pane.path, 1, step_lines(1, 30, hits=()), [], pane.view)
        await pilot.pause()
        assert list(view.numbers) == list(range(1, 35))
        assert pane.last_no == 34
