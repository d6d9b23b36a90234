"""``cockpit`` freezes its heap once it is up (full collections then skip start-up's objects); an app
started without asking for it (every test's) leaves the collector alone."""

from __future__ import annotations

import gc
from pathlib import Path

from tests.test_ui_app import SIZE, app_for
from tests.test_ui_support import wait_for


async def test_the_heap_is_frozen_a_moment_after_start_when_asked(tmp_path: Path) -> None:
    app = app_for(tmp_path)
    assert app.freeze_gc is False  # an app asks for it only from `cockpit` itself (cli/tui.py)
    app.freeze_gc = True
    gc.unfreeze()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: gc.get_freeze_count() > 10_000, timeout=10, what="the heap frozen")
    finally:
        gc.unfreeze()
