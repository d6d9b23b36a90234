"""A few deterministic SVG snapshots at fixed sizes (pytest-textual-snapshot).

The app shows a fixed story (tests/test_ui_support.py: the seed's zombie, four H100s, the FX
race log, three attempts) with a fixed clock, in UTC, and never refreshes, so every run draws the
same frame.  Update after an intended change with ``pytest tests/test_ui_snapshots.py
--snapshot-update`` and look at the new SVGs before committing them.
"""

from __future__ import annotations

import time

import pytest

from tests.test_ui_support import story_app, wait_for


@pytest.fixture(autouse=True)
def _deterministic(monkeypatch):
    """UTC, and a fixed SVG id prefix: Rich derives it from the repr of every segment, which
    includes invisible metadata (mouse offsets) that may differ between identical frames."""
    from rich.console import Console

    export_svg = Console.export_svg

    def fixed_id(self, *args, unique_id=None, **kwargs):
        return export_svg(self, *args, unique_id=unique_id or "terminal-cockpit", **kwargs)

    monkeypatch.setattr(Console, "export_svg", fixed_id)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_story_120x40(snap_compare, tmp_path):
    """The main screen: UNTESTED banner (hatched), zombie flagged with its parent, FX race marked."""
    assert snap_compare(story_app(tmp_path), terminal_size=(120, 40))


def test_story_80x24(snap_compare, tmp_path):
    """The smallest supported terminal."""
    assert snap_compare(story_app(tmp_path), terminal_size=(80, 24))


def test_reboot_confirmation(snap_compare, tmp_path):
    """The reboot modal shows the exact host command."""
    assert snap_compare(story_app(tmp_path), press=["R"], terminal_size=(100, 30))


def test_failed_attempt_light_theme(snap_compare, tmp_path):
    """A failed attempt (solid red) in the light theme, history focused."""

    async def show_failed(pilot):
        app = pilot.app
        await wait_for(pilot, lambda: len(app.query_one("HistoryPane").records) == 3, what="the history")
        app.theme = "light"
        app.query_one("VerdictStrip").show_record(app.query_one("HistoryPane").records[0])
        await pilot.press("4")

    assert snap_compare(story_app(tmp_path), run_before=show_failed, terminal_size=(100, 30))
