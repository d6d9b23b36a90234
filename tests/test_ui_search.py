"""Searching the log like a pager (pilot tests): highlight mode with n/N and a 3/17 count, regex and
case toggles, context lines when filtering, a bad regex, Esc, a large ring searched in chunks.

The log is a real file read through the local transport (``refresh_now``), and new lines are
appended to it and read the same way, so the pane gets its lines exactly as in a session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.job import JobRecord
from cockpit.ui.app import create_app
from cockpit.ui.panes import LogPane
from cockpit.ui.panes.log_search import QueryError, format_query, parse_query, toggle_option
from cockpit.ui.screens import HelpScreen
from tests.test_ui_support import local_config, make_engine, wait_for

SIZE = (120, 40)
HITS = (20, 50, 90, 150, 190)


def step_lines(first: int, last: int, hits: tuple[int, ...] = HITS) -> list[str]:
    out = []
    for i in range(first, last + 1):
        if i in hits:
            out.append(f"W1202 torch/_dynamo/convert_frame.py:844] hit config.cache_size_limit (8) at line {i}")
        else:
            out.append(f"step {i} | loss {1 + (i % 7) / 10:.2f} | lr 3.0e-04 | tokens/s {120000 + i}")
    return out


def log_app(tmp_path: Path, lines: list[str], extra: str = "") -> tuple[Any, Path]:
    log = tmp_path / "logs" / "train-1.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("\n".join(lines) + "\n")
    cfg = local_config(tmp_path, extra=extra)
    app = create_app(cfg, engine=make_engine(cfg), refresh=False)
    app.owns_engine = True
    app.engine.set_job(JobRecord(attempt=1, pid=None, pgid=None, log_path=str(log)))
    return app, log


async def loaded(app: Any, pilot: Any, last: int) -> LogPane:
    pane = app.query_one(LogPane)
    app.refresh_now()
    await wait_for(pilot, lambda: pane.last_no >= last, what=f"the log up to line {last}")
    return pane


async def append(app: Any, pilot: Any, log: Path, lines: list[str], last: int) -> None:
    with log.open("a") as fh:
        fh.write("\n".join(lines) + "\n")
    pane = app.query_one(LogPane)
    app.refresh_now()
    await wait_for(pilot, lambda: pane.last_no >= last, what=f"the new lines up to {last}")


def notes(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


def underlined(pane: LogPane, line_no: int) -> list[str]:
    """The texts drawn with the search's mark (bold underline) on line ``line_no``'s row."""
    view = pane.log_view
    row = view.row_of(line_no)
    assert row is not None
    y = row - int(view.scroll_offset.y)
    assert 0 <= y < view.size.height, f"line {line_no} is not on screen"
    return [seg.text for seg in view.render_line(y) if seg.style is not None and seg.style.underline]


# -- the query syntax -----------------------------------------------------------------------------

def test_query_options_and_errors():
    q = parse_query("-r -s -C 3 loss \\d+")
    assert q is not None and (q.regex, q.case, q.context, q.pattern) == (True, True, 3, "loss \\d+")
    assert parse_query("-C2 x").context == 2
    plain = parse_query("a.b (c")  # literal by default: regex characters are text
    assert plain is not None and not plain.regex and plain.matcher("x a.b (c y") and not plain.matcher("axb (c")
    assert parse_query("CACHE").matcher("hit cache_size")  # ignore case by default
    assert not parse_query("-s CACHE").matcher("hit cache_size")
    assert parse_query("-- -r x").pattern == "-r x"  # -- ends the options
    assert parse_query("-0.5 loss").pattern == "-0.5 loss"  # not an option: part of the text
    assert parse_query("   ") is None and parse_query("-r") is None
    with pytest.raises(QueryError, match=r"bad regex 'loss\(': missing \).*remove -r"):
        parse_query("-r loss(")
    with pytest.raises(QueryError, match="-C needs a number"):
        parse_query("-C x y")
    assert toggle_option("loss", "-r") == "-r loss"
    assert toggle_option("-r -C 2 loss", "-r") == "-C 2 loss"
    assert toggle_option("-r loss", "-s") == "-r -s loss"
    assert toggle_option("-r (", "-r") == "("  # a bad regex can still be switched back to a literal
    assert format_query("-r x") == "-- -r x"


# -- highlight mode -------------------------------------------------------------------------------

async def test_highlight_marks_counts_jumps_esc_resumes_following_and_then_leaves_zoom_to_the_screen(tmp_path):
    app, _ = log_app(tmp_path, step_lines(1, 200))
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 200)
        view = pane.log_view
        assert pane.following
        await pilot.press("s")
        assert pane.prompt_open and app.focused is pane.query_one("#log-filter")
        await pilot.press(*"cache_size", "enter")
        assert not pane.prompt_open and pane.search_mode == "highlight"
        assert len(view.lines) == 200  # every line kept
        assert pane.hits == list(HITS)
        assert not pane.following and not view.auto_scroll  # following pauses while searching
        # the first match from the top of the screen (the view was at the end: lines 163-200 showed)
        assert view.current == 190
        assert "match 5/5" in str(pane.border_subtitle)
        assert "search: cache_size" in str(pane.border_title)
        assert underlined(pane, 190) == ["cache_size"]
        await pilot.press("n")  # wraps to the top, and says so
        assert view.current == 20 and "match 1/5" in str(pane.border_subtitle)
        assert "search hit BOTTOM, continuing at TOP" in notes(app)
        assert underlined(pane, 20) == ["cache_size"]
        await pilot.press("n", "n")
        assert view.current == 90 and "match 3/5" in str(pane.border_subtitle)
        await pilot.press("N")
        assert view.current == 50 and "match 2/5" in str(pane.border_subtitle)
        await pilot.press("escape")  # clears the search, follows again
        assert pane.search_query is None and pane.hits == []
        assert pane.following and view.auto_scroll and view.current is None
        assert "match" not in str(pane.border_subtitle) and "search:" not in str(pane.border_title)
        assert underlined(pane, 200) == []
        await pilot.press("n")
        assert "no search: s marks matches, / filters; then n / N" in notes(app)
        # Esc without a search leaves zoom to the screen
        await pilot.press("z")
        assert app.screen.maximized is pane
        await pilot.press("escape")
        assert app.screen.maximized is None


async def test_highlight_counts_new_lines_and_stays_paused(tmp_path):
    app, log = log_app(tmp_path, step_lines(1, 200))
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 200)
        await pilot.press("s", *"cache_size", "enter")
        assert pane.count_text() == "5/5"
        await append(app, pilot, log, step_lines(201, 260, hits=(230, 255)), 260)
        assert pane.hits == [*HITS, 230, 255] and pane.count_text() == "5/7"
        assert not pane.following and len(pane.log_view.lines) == 260
        assert "match 5/7" in str(pane.border_subtitle)
        await pilot.press("n", "n")
        assert pane.log_view.current == 255


async def test_nothing_matches_yet_then_n_finds_a_new_line(tmp_path):
    app, log = log_app(tmp_path, step_lines(1, 100, hits=()))
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 100)
        await pilot.press("s", *"NCCL", "enter")
        assert pane.hits == [] and pane.count_text() == "–/0"
        assert any("no line matches 'NCCL' (yet)" in m for m in notes(app))
        await append(app, pilot, log, ["[rank1]: NCCL watchdog timeout"], 101)
        await pilot.press("n")
        assert pane.log_view.current == 101 and pane.count_text() == "1/1"


# -- regex and case -------------------------------------------------------------------------------

async def test_regex_and_case_toggles_then_a_bad_regex_keeps_the_previous_search(tmp_path):
    app, _ = log_app(tmp_path, step_lines(1, 200))
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 200)
        inp = pane.query_one("#log-filter")
        await pilot.press("s", *"loss 1\\.[05] ")
        await pilot.press("ctrl+r")  # in the prompt: switches -r in the text itself
        assert inp.value == "-r loss 1\\.[05] "
        hint = str(pane.query_one("#log-search-hint").render())
        assert "regex, ignore case" in hint
        await pilot.press("enter")
        q = pane.search_query
        assert q is not None and q.regex
        want = [i for i in range(1, 201) if i not in HITS and i % 7 in (0, 5)]
        assert pane.hits == want
        # the same text as a literal matches nothing: ctrl+r on the active search switches it back
        await pilot.press("ctrl+r")
        assert pane.search_query.text == "loss 1\\.[05]" and not pane.search_query.regex and pane.hits == []
        # case: ignored by default, -s makes it count
        await pilot.press("s", "ctrl+u", *"CACHE_SIZE", "enter")
        assert pane.hits == list(HITS)
        await pilot.press("ctrl+s")
        assert pane.search_query.text == "-s CACHE_SIZE" and pane.search_query.case and pane.hits == []
        assert "search: literal, case-sensitive" in notes(app)
        await pilot.press("ctrl+s")
        assert pane.hits == list(HITS)
        await pilot.press("escape")  # the search cleared: a bad regex on this log, as on a fresh one
        assert pane.search_query is None and pane.following
        await pilot.press("slash", *"-r cache_\\w+", "enter")
        assert pane.filter == "-r cache_\\w+" and list(pane.log_view.numbers) == list(HITS)
        await pilot.press("slash", "ctrl+u", *"-r cache_(", "enter")
        msg = notes(app)[-1]
        assert msg.startswith("bad regex 'cache_(': missing ), unterminated subpattern at position 6") and "previous search stays" in msg
        assert pane.prompt_open  # the text stays to be fixed
        assert "missing )" in str(pane.query_one("#log-search-hint").render())
        assert pane.filter == "-r cache_\\w+" and list(pane.log_view.numbers) == list(HITS)  # nothing lost
        await pilot.press("escape")  # closes the prompt; the filter stays
        assert not pane.prompt_open and pane.filter == "-r cache_\\w+"


# -- filtering with context -------------------------------------------------------------------------

async def test_filter_with_context_lines_live(tmp_path):
    app, log = log_app(tmp_path, step_lines(1, 200))
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 200)
        view = pane.log_view
        await pilot.press("slash", *"-C 2 cache_size", "enter")
        assert pane.search_mode == "filter" and pane.following  # a filter keeps following
        want = sorted({n for h in HITS for n in range(h - 2, h + 3) if 1 <= n <= 200})
        assert list(view.numbers) == want
        assert pane.hits == list(HITS)
        # context lines are drawn dim; the matches marked
        assert underlined(pane, 190) == ["cache_size"]
        y = view.row_of(189) - int(view.scroll_offset.y)
        assert all(seg.style is None or seg.style.underline is not True for seg in view.render_line(y))
        # a match at the end of one batch takes its "after" lines from the next one
        await append(app, pilot, log, step_lines(201, 210, hits=(204, 210)), 210)
        await append(app, pilot, log, step_lines(211, 220, hits=()), 220)
        assert list(view.numbers)[len(want):] == [202, 203, 204, 205, 206, 208, 209, 210, 211, 212]
        assert pane.hits == [*HITS, 204, 210]
        await pilot.press("n")  # n / N also walk a filter's matches: the first one on screen, then on
        first = view.current
        assert first in pane.hits and not pane.following
        await pilot.press("n")
        assert view.current == pane.hits[(pane.hits.index(first) + 1) % len(pane.hits)]
        await pilot.press("escape")
        assert pane.filter == "" and len(view.lines) == 220 and pane.following


# -- a large ring ---------------------------------------------------------------------------------------

async def test_a_200k_line_ring_is_searched_in_chunks(tmp_path):
    """Above 20,000 lines the matching runs in chunks on the event loop, which keeps turning meanwhile
    (a heartbeat task counts its turns); lines that arrive during the scan count too."""
    import asyncio

    app, _ = log_app(tmp_path, ["x"], extra="log_lines = 200000")
    n = 200_000
    ring = [f"step {i} | loss {1 + (i % 7) / 10:.2f}" + (" | cache_size" if i % 1000 == 0 else "") for i in range(1, n + 1)]
    turns = 0

    async def heartbeat() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 1)
        pane.history = lambda: (1, ring)  # what the observer holds
        pane.feed("/big.log", 1, ring, [])
        assert len(pane.log_view.lines) == n
        beat = asyncio.create_task(heartbeat())
        try:
            assert pane.apply_search("-r CACHE_size", "highlight")
            assert pane.searching and pane.count_text() == "searching…"  # not done in one go
            assert "match searching…" in str(pane.border_subtitle)
            at_start = turns
            ring.append("step late | cache_size")  # arrives during the scan
            pane.feed("/big.log", n + 1, ring[-1:], [])
            await wait_for(pilot, lambda: not pane.searching, timeout=60, what="the chunked search")
            assert turns - at_start >= 2  # the loop kept turning while it ran
            assert pane.hits == [*range(1000, n + 1, 1000), n + 1]
            assert pane.log_view.current is not None and pane.count_text().endswith(f"/{n // 1000 + 1}")
            # a filter of the whole ring: re-shown in chunks; a line that arrives meanwhile comes after the rest
            pane.clear_search()
            assert pane.set_filter("cache_size") and pane.searching
            at_start = turns
            ring.append("step later | cache_size")
            pane.feed("/big.log", n + 2, ring[-1:], [])
            await wait_for(pilot, lambda: not pane.searching, timeout=60, what="the chunked filter")
            assert turns - at_start >= 2
            assert list(pane.log_view.numbers) == [*range(1000, n + 1, 1000), n + 1, n + 2]
            assert pane.hits == list(pane.log_view.numbers)
        finally:
            beat.cancel()


# -- keys: remappable, listed -------------------------------------------------------------------------------

async def test_search_keys_are_remappable_and_in_the_help(tmp_path):
    app, _ = log_app(tmp_path, step_lines(1, 200), extra='[keymap]\nnext-match = "x"\nsearch = "ctrl+f"\n')
    async with app.run_test(size=SIZE) as pilot:
        pane = await loaded(app, pilot, 200)
        await pilot.press("ctrl+f", *"cache_size", "enter")
        assert pane.search_mode == "highlight" and pane.log_view.current == 190
        await pilot.press("x")
        assert pane.log_view.current == 20
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        body = app.screen.query_one("HelpBody")
        text = body.build()
        from rich.console import Console

        console = Console(width=160, record=True)
        console.print(text)
        out = console.export_text()
        for want in ("next-match", "prev-match", "search-regex", "search-case", "copy", "mouse", "set-clipboard on", "-C N"):
            assert want in out, want
        assert "ctrl+f" in out  # the remapped key is what the help shows
