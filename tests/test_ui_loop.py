"""The edit → attempt loop in the TUI: the status line follows saves in the deploy source,
attempt on save (toggle, read-only), verdict notifications, live reload of the config and theme
files.  Real files, a local-transport engine, Pilot; waiting is on conditions with deadlines."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.changes import summarise
from cockpit.core.config import load_config
from cockpit.ui.app import CockpitApp, create_app
from cockpit.ui.panes import StatusLine
from cockpit.ui.screens import HypothesisScreen
from tests.test_ui_support import make_engine, wait_for

SIZE = (80, 24)


@pytest.fixture(autouse=True)
def _no_tmux(monkeypatch):
    monkeypatch.delenv("TMUX", raising=False)  # never talk to the developer's tmux


def config_text(tmp: Path, *, on_save: bool = False, theme: str = "dark", ui_extra: str = "", sleep: float = 5) -> str:
    src, ws = tmp / "src", tmp / "ws"
    return f"""
[target]
name = "lab"
transport = "local"
[job]
workdir = "{ws}"
command = "{sys.executable} train.py; sleep {sleep:g}"
log = "{ws}/train-{{attempt}}.log"
progress_pattern = '^step'
stop_timeout = 1
[deploy]
source = "{src}"
dest = "{ws}"
[cache]
paths = []
[journal]
path = "{tmp}/j/journal.jsonl"
[gpu]
enabled = false
[ui]
refresh_interval = 1
theme = "{theme}"
{ui_extra}
[verify]
settle = 0.5
[loop]
debounce = 0.2
attempt_on_save = {"true" if on_save else "false"}
bell = false
tmux = false
"""


def make_app(tmp: Path, **kw: Any) -> CockpitApp:
    src, ws = tmp / "src", tmp / "ws"
    src.mkdir(exist_ok=True)
    ws.mkdir(exist_ok=True)
    (src / "train.py").write_text("lr = 1e-3\nprint('step 1')\n")
    (src / "drafter.py").write_text("k = 4\n")
    path = tmp / "cockpit.toml"
    path.write_text(config_text(tmp, on_save=kw.pop("on_save", False), theme=kw.pop("theme", "dark"), sleep=kw.pop("sleep", 5)))
    cfg = load_config(path)
    app = create_app(cfg, engine=make_engine(cfg), refresh=False, **kw)
    app.owns_engine = True
    return app


def status(app: CockpitApp) -> str:
    return app.query_one(StatusLine).render().plain


def notes(app: CockpitApp) -> list[str]:
    return [n.message for n in app._notifications]


async def watching(pilot: Any, app: CockpitApp) -> None:
    await wait_for(pilot, lambda: app.loop_runner is not None and app.loop_runner.running, what="the source watcher")


async def reloading(pilot: Any, app: CockpitApp) -> None:
    await wait_for(pilot, lambda: app.reloaders is not None and app.reloaders.ready, what="the config and theme reloaders")


async def test_a_save_shows_in_the_status_line_and_in_the_attempt_prompt(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await watching(pilot, app)
        assert "✎" not in status(app)
        (tmp_path / "src" / "train.py").write_text("lr = 3e-4\nprint('step 1')\n")
        (tmp_path / "src" / "drafter.py").write_text("k = 8\n")
        await wait_for(pilot, lambda: "✎ 2 changed: drafter.py, train.py" in status(app), what="the changed files in the status line")
        assert "⟳ on save" not in status(app)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, HypothesisScreen), what="the prompt")
        assert app.screen.changed == ["drafter.py", "train.py"]
        assert "drafter.py, train.py" in app.screen.changed_text()
        await pilot.press("escape")


async def test_attempt_on_save_runs_exactly_one_attempt_and_notifies(tmp_path):
    app = make_app(tmp_path, on_save=True)
    async with app.run_test(size=SIZE) as pilot:
        await watching(pilot, app)
        assert "⟳ on save" in status(app)
        (tmp_path / "src" / "train.py").write_text("lr = 3e-4\nprint('step 1')\n")
        await wait_for(pilot, lambda: len(app.engine.journal.attempts()) == 1 and not app.engine.journal.attempts()[0].open,
                       timeout=30, what="the on-save attempt")
        runner = app.loop_runner
        await wait_for(pilot, lambda: runner.loop.state == "idle" and app.status_state.action is None, what="the loop to go idle")
        assert not runner.loop.queued and not runner.watcher.settling
        await wait_for(pilot, lambda: len(app.query_one("#history-table").rows) == 1, what="the history row")
        recs = app.engine.journal.attempts()
        assert len(recs) == 1 and recs[0].note == "on save: train.py"
        assert any(n.startswith("attempt 1 ") for n in notes(app)), notes(app)  # the one-line verdict
        assert "✎" not in status(app)  # deployed: nothing pending
        screen = app.views.verdict_screen(recs[0])
        if recs[0].diff:
            assert screen.body.changes_text() == summarise(recs[0].diff)
        await app.engine.run_action("stop")


async def test_a_manual_attempt_and_an_on_save_attempt_land_the_same_way(tmp_path):
    """One path for every attempt: the same ActionFinished with its result, the same bell and
    one-line notification, the same journal record, whether a key or a save started it."""
    from cockpit.ui.messages import ActionFinished

    seen: list[ActionFinished] = []
    app = make_app(tmp_path)
    app.cfg.loop.bell = True
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    toasts: list[str] = []
    notify = app.notify

    def record_toast(message: str, *args: Any, **kw: Any) -> None:
        toasts.append(message)
        notify(message, *args, **kw)

    app.notify = record_toast  # type: ignore[method-assign]  # toasts expire; the record does not

    def hook(msg: Any) -> None:
        if isinstance(msg, ActionFinished) and msg.action == "attempt":
            seen.append(msg)

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await watching(pilot, app)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, HypothesisScreen), what="the prompt")
        await pilot.press(*"by hand", "enter")
        await wait_for(pilot, lambda: len(seen) == 1, timeout=30, what="the manual attempt's verdict")
        await wait_for(pilot, lambda: app.status_state.action is None, what="the action to end")
        await pilot.press("A")
        await wait_for(pilot, lambda: app.loop_runner.enabled, what="attempt on save")
        (tmp_path / "src" / "train.py").write_text("lr = 3e-4\nprint('step 1')\n")
        await wait_for(pilot, lambda: len(seen) == 2, timeout=30, what="the on-save attempt's verdict")
        await wait_for(pilot, lambda: len(bells) == 2, what="the second bell")
        # the key's other path (no watcher running): straight through the driver
        app.loop_runner.set_enabled(False)
        await app.driver.attempt("direct", app.post_message)
        await wait_for(pilot, lambda: len(seen) == 3 and len(bells) == 3, timeout=30, what="the direct attempt's verdict and bell")
        for msg in seen:
            assert msg.result is not None and msg.outcome == msg.result.outcome.value and msg.attempt == msg.result.attempt
        assert [m.attempt for m in seen] == [1, 2, 3]
        for n in (1, 2, 3):
            assert any(x.startswith(f"attempt {n} ") for x in toasts), toasts
        recs = app.engine.journal.attempts()
        assert [r.note for r in recs] == ["by hand", "by hand (#2)", "direct"] and not any(r.open for r in recs)
        await app.engine.run_action("stop")


async def test_the_toggle_key_flips_attempt_on_save_and_read_only_blocks_it(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await watching(pilot, app)
        assert not app.loop_runner.enabled
        await pilot.press("A")
        await wait_for(pilot, lambda: "⟳ on save" in status(app), what="on save in the status line")
        assert app.loop_runner.enabled
        await pilot.press("A")
        await wait_for(pilot, lambda: "⟳ on save" not in status(app), what="on save gone")
        assert not app.loop_runner.enabled

    (tmp_path / "ro").mkdir()
    ro = make_app(tmp_path / "ro", on_save=True, read_only=True)
    async with ro.run_test(size=SIZE) as pilot:
        await watching(pilot, ro)
        assert not ro.loop_runner.enabled  # [loop] attempt_on_save = true, but read-only
        await pilot.press("A")
        await pilot.pause()
        assert not ro.loop_runner.enabled and "⟳ on save" not in status(ro)


async def test_an_invalid_config_edit_keeps_the_running_config_and_names_the_key(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await reloading(pilot, app)
        path = tmp_path / "cockpit.toml"
        path.write_text(path.read_text().replace("refresh_interval = 1", "refresh_interval = -5"))
        await wait_for(pilot, lambda: app.status_state.config_error is not None, what="the config error")
        assert "ui.refresh_interval" in app.status_state.config_error
        assert "ui.refresh_interval" in status(app)
        assert any("ui.refresh_interval" in n for n in notes(app))
        assert app.cfg.ui.refresh_interval == 1
        # fixing it clears the error and applies the valid change
        path.write_text(path.read_text().replace("refresh_interval = -5", "refresh_interval = 3"))
        await wait_for(pilot, lambda: app.status_state.config_error is None, what="the error to clear")
        assert app.cfg.ui.refresh_interval == 3


async def test_a_valid_theme_change_in_the_config_file_applies(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await reloading(pilot, app)
        assert app.theme == "dark"
        path = tmp_path / "cockpit.toml"
        path.write_text(path.read_text().replace('theme = "dark"', 'theme = "light"').replace("[target]", "[target]\nhost = \"x\""))
        await wait_for(pilot, lambda: app.theme == "light", what="the light theme")
        assert any("applied ui.theme" in n and "restart cockpit to apply target/ssh changes" in n for n in notes(app)), notes(app)


async def test_editing_the_current_theme_file_reapplies_it_and_a_broken_edit_keeps_it(tmp_path):
    user = tmp_path / "xdg-config" / "cockpit" / "themes"
    user.mkdir(parents=True)
    dark = (Path(__file__).resolve().parents[1] / "themes" / "dark.toml").read_text()
    (user / "mine.toml").write_text(dark)
    app = make_app(tmp_path, theme="mine")
    async with app.run_test(size=SIZE) as pilot:
        await reloading(pilot, app)
        assert app.reloaders.themes is not None
        assert app.theme == "mine" and app.current_theme.primary.upper() == "#4A9EFF"
        (user / "mine.toml").write_text(dark.replace('primary = "#4A9EFF"', 'primary = "#00FF00"'))
        await wait_for(pilot, lambda: app.current_theme.primary.upper() == "#00FF00", what="the edited theme")
        (user / "mine.toml").write_text(dark.replace('primary = "#4A9EFF"', 'primary = 12'))
        await wait_for(pilot, lambda: any("keeping the last good version" in n for n in notes(app)), what="the theme error")
        assert app.theme == "mine" and app.current_theme.primary.upper() == "#00FF00"
