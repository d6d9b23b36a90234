"""Pilot tests: every binding, the panes updating from a real engine and observer, read-only,
themes, keymaps, failures shown instead of crashes.  They assert on widget state and messages.

Waiting is always on a condition with a deadline (``wait_for``), never a fixed sleep.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cockpit.core.actions.job import JobRecord
from cockpit.core.engine import Busy
from cockpit.core.layers import Layer
from cockpit.core.remote.base import RemoteError
from cockpit.core.remote.local import LocalTransport
from cockpit.core.runtimes import HostRuntime
from cockpit.ui.app import CockpitApp, create_app
from cockpit.ui.commands import CockpitCommands
from cockpit.ui.messages import ActionFinished, ActionRefused, ActionStarted, StageEvent
from cockpit.ui.panes import GpuPane, HistoryPane, LogPane, ProcsPane, StatusLine, VerdictStrip
from cockpit.ui.screens import ConfirmScreen, HelpScreen, HypothesisScreen, VerdictScreen
from tests.test_ui_support import FIXTURES, local_config, make_engine, wait_for

SIZE = (80, 24)


def app_for(tmp_path: Path, **kw: Any) -> CockpitApp:
    cfg = kw.pop("cfg", None) or local_config(tmp_path, runtime=kw.pop("runtime", "none"), extra=kw.pop("extra", ""))
    engine = kw.pop("engine", None) or make_engine(cfg)
    kw.setdefault("refresh", False)
    app = create_app(cfg, engine=engine, **kw)
    app.owns_engine = True  # close its transport (the local session shell) when the test ends
    return app


class Recorder:
    """``message_hook`` that keeps the cockpit messages an app handled."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    def __call__(self, msg: Any) -> None:
        if isinstance(msg, (ActionStarted, ActionFinished, ActionRefused, StageEvent)):
            self.messages.append(msg)

    def of(self, cls: type) -> list[Any]:
        return [m for m in self.messages if isinstance(m, cls)]


def notes(app: CockpitApp) -> list[str]:
    return [n.message for n in app._notifications]


# -- the demo loop: attempt → history row with an outcome ------------------------------------------

async def test_attempt_on_the_demo_records_an_outcome_and_updates_every_pane():
    from cockpit.demo import demo_config

    rec = Recorder()
    app = create_app(demo_config(), refresh=True)
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        history = app.query_one(HistoryPane)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, HypothesisScreen), what="the hypothesis prompt")
        prompt = app.screen.query_one("#prompt-input")
        assert prompt.value == ""  # no earlier attempt: nothing to pre-fill
        await pilot.press(*"baseline")
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(rec.of(ActionFinished)), timeout=40, what="the attempt's verdict")
        done = rec.of(ActionFinished)[0]
        assert done.action == "attempt" and done.outcome == "failed" and done.verdict.layer is Layer.APP
        assert rec.of(ActionStarted)[0].note == "baseline"
        assert {m.action for m in rec.of(StageEvent)} >= {"deploy", "clear-cache", "launch", "verify"}  # live stages
        await wait_for(pilot, lambda: history.table.row_count == 1, what="the history row")
        row = history.table.get_row("1")
        assert "FAILED" in row[1].plain and row[2].plain == "app" and "baseline" in row[5]
        strip = app.query_one(VerdictStrip)
        assert strip.banner_text() == "✘ FAILED — the code ran and failed (app)"
        assert "verify" in strip.plain() and "[app]" in strip.plain()
        # the log pane followed the attempt's log and classified its error
        log = app.query_one(LogPane)
        await wait_for(pilot, lambda: bool(log.errors), timeout=10, what="the classified error in the log")
        assert log.path and log.path.endswith("train-1.log")
        assert any("RuntimeError" in line for line in log.log_view.lines)
        # the other panes were refreshed by their pollers
        procs, gpu = app.query_one(ProcsPane), app.query_one(GpuPane)
        await wait_for(pilot, lambda: procs.table.row_count > 0 and bool(gpu.cards), what="processes and GPU")
        assert str(os.getpid()) in {r.value for r in procs.table.rows}
        assert "A100" in next(iter(gpu.cards.values())).head_text().plain
        # the full verdict from the history
        await pilot.press("4")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, VerdictScreen), what="the verdict modal")
        body = app.screen.body.build()
        from rich.console import Console

        console = Console(width=120, record=True)
        console.print(body)
        text = console.export_text()
        assert "FAILED" in text and "first error" in text and "verify › alive" in text
        await pilot.press("escape")
        # the next attempt's prompt is pre-filled with the last hypothesis; escape runs nothing
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, HypothesisScreen), what="the second prompt")
        assert app.screen.query_one("#prompt-input").value == "baseline"
        await pilot.press("escape")
        await pilot.pause()
        assert len(rec.of(ActionStarted)) == 1


# -- help, confirm, zoom, theme ----------------------------------------------------------------------

async def test_zoom_refusals_help_palette_shell_and_quit_of_a_plain_app(tmp_path, monkeypatch):
    """Checks of a plain app (no job, a plain host) that each leave it as they found it share one
    app run, in this order: zoom, the refused reboot and stop, help, the palette, the shell without
    a terminal, and quit (last: it ends the app)."""
    monkeypatch.setenv("SHELL", "/bin/sh")
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        # before any action the strip says so, and which key starts one
        await pilot.pause()
        strip = app.query_one(VerdictStrip)
        shown = " ".join(str(app.query_one(f"#verdict-{w}").render()) for w in ("banner", "stages"))
        assert "· IDLE" in shown and "press t to attempt a fix" in shown, (strip.state, shown)
        # zoom toggles the focused pane
        await pilot.press("z")
        assert app.screen.maximized is app.query_one(LogPane)
        await pilot.pause()
        # the bars stay on top, the zoomed pane under them (Textual puts a maximized pane first)
        line, strip, log = (app.query_one(w).region for w in (StatusLine, VerdictStrip, LogPane))
        assert line.y == 0 and strip.y == line.bottom and log.y >= strip.bottom, (line, strip, log)
        await pilot.press("z")
        assert app.screen.maximized is None
        await pilot.press("1", "z")
        assert app.screen.maximized is app.query_one(ProcsPane)
        await pilot.press("4")  # focusing another pane leaves the zoom
        assert app.screen.maximized is None and app.focused is app.query_one(HistoryPane).table
        # a plain host's reboot is refused; stop without a job explains
        await pilot.press("R")
        await pilot.press("S")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("cockpit does not reboot hosts" in n for n in notes(app))
        assert any("nothing to stop" in n for n in notes(app))
        # help lists every action and closes
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        from rich.console import Console

        console = Console(width=140, record=True)
        console.print(app.screen.query_one("HelpBody").build())
        text = console.export_text()
        for action_id in ("attempt", "stop", "reboot", "shell", "zoom", "filter", "next-error", "theme", "quit"):
            assert action_id in text
        assert "[app]" in text and "UNTESTED — the fix never ran" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help to close")
        # the palette offers the actions
        provider = CockpitCommands(app.screen)
        hits = [h async for h in provider.discover()]
        titles = {str(h.display) for h in hits}
        assert {"Attempt", "Reboot", "Zoom", "Help"} <= titles
        found = [h async for h in provider.search("reboo")]
        assert found and "Reboot" in str(found[0].match_display)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CommandPalette", what="the palette")
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ != "CommandPalette", what="the palette to close")
        # the shell without a terminal says the command
        await pilot.press("exclamation_mark")
        await wait_for(pilot, lambda: any("/bin/sh" in n for n in notes(app)), what="the shell notice")
        # quit while an action runs asks first
        app.engine.current_action = "attempt"
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the quit confirmation")
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running
        app.engine.current_action = None
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, what="the app to quit")


async def test_theme_cycles_and_layer_colours_follow(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "dark"
        seen = []
        for _ in range(4):
            await pilot.press("ctrl+t")
            seen.append(app.theme)
            if app.theme == "colorblind":  # the layer colours follow the theme just switched to
                assert app.get_css_variables()["layer-app"].upper() == "#D55E00"
                assert str(app.query_one(VerdictStrip).layer_style("app").color.name).upper() == "#D55E00"
        assert seen == ["light", "high-contrast", "colorblind", "dark"]
        assert app.get_css_variables()["layer-app"].upper() != "#D55E00"  # and back with dark



async def test_stop_asks_with_the_exact_command_and_cancel_does_nothing(tmp_path):
    rec = Recorder()
    app = app_for(tmp_path)
    app.engine.set_job(JobRecord(attempt=7, pid=4242, pgid=4242, start_time=1, log_path=str(tmp_path / "x.log")))
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the stop confirmation")
        command = str(app.screen.query_one("#confirm-command").content)
        assert "kill -s TERM -- -4242" in command and "kill -s KILL -- -4242" in command
        assert app.screen.focused.id == "confirm-no"  # enter alone never confirms
        await pilot.press("R")  # another destructive key inside the modal does nothing
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the modal to close")
        await pilot.pause()
        assert rec.of(ActionStarted) == [] and app.engine.current_action is None
        assert not [w for w in app.workers if w.group == "action"]
        # and confirming runs it, through the engine
        await pilot.press("S")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation again")
        await pilot.press("y")
        await wait_for(pilot, lambda: bool(rec.of(ActionFinished)), what="the stop verdict")
        assert rec.of(ActionFinished)[0].action == "stop" and rec.of(ActionFinished)[0].verdict is not None


async def test_reboot_asks_with_the_pct_command_and_cancel_does_nothing(tmp_path):
    rec = Recorder()
    app = app_for(tmp_path, runtime="pct")
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the reboot confirmation")
        assert str(app.screen.query_one("#confirm-command").content) == "/nonexistent/pct reboot 200"
        assert "Proxmox host" in str(app.screen.query_one("#confirm-where").content)
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the modal to close")
        assert rec.of(ActionStarted) == []

async def test_config_theme_and_broken_user_theme_fall_back_without_crashing(tmp_path):
    themes = Path(os.environ["XDG_CONFIG_HOME"]) / "cockpit" / "themes"
    themes.mkdir(parents=True)
    (themes / "broken.toml").write_text('[theme]\nprimary = "not-a-colour"\n')
    (themes / "mine.toml").write_text('[theme]\nprimary = "#123456"\n')
    app = app_for(tmp_path, extra='theme = "broken"')
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "dark"
        assert any("broken.toml" in n and "not a colour" in n for n in notes(app))
        assert any("theme = 'broken' not found" in n for n in notes(app))
        assert "mine" in app.themes.names


# -- read-only ------------------------------------------------------------------------------------

async def test_read_only_disables_every_action(tmp_path):
    rec = Recorder()
    app = app_for(tmp_path, read_only=True, runtime="pct")
    app.engine.set_job(JobRecord(attempt=1, pid=4242, pgid=4242, log_path=str(tmp_path / "x.log")))
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        for key in ("t", "D", "C", "V", "L", "S", "R", "exclamation_mark"):
            await pilot.press(key)
        await pilot.pause()
        assert len(app.screen_stack) == 1 and rec.of(ActionStarted) == []
        for action in ("attempt", "deploy", "clear_cache", "relaunch", "stop", "reboot", "shell"):
            assert app.check_action(action, ()) is False
        assert app.check_action("zoom", ()) is True and app.check_action("help", ()) is True
        assert "READ-ONLY" in app.query_one(StatusLine).render().plain
        shown = {b.binding.id for b in app.active_bindings.values() if b.enabled}
        assert "attempt" not in shown and "stop" not in shown and "zoom" in shown
        provider = CockpitCommands(app.screen)
        available = {a.id for a in provider._available()}
        assert "attempt" not in available and "reboot" not in available and "zoom" in available
        await pilot.press("z")  # looking still works
        assert app.screen.maximized is not None

# -- the log pane ----------------------------------------------------------------------------------

async def _app_with_log(tmp_path: Path) -> CockpitApp:
    log = tmp_path / "logs" / "train-1.log"
    log.parent.mkdir(parents=True)
    log.write_bytes((FIXTURES / "logs" / "seed_fx_threads.log").read_bytes())
    app = app_for(tmp_path)
    app.engine.set_job(JobRecord(attempt=1, pid=None, pgid=None, log_path=str(log)))
    return app


async def test_log_follow_pause_filter_and_errors(tmp_path):
    app = await _app_with_log(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        app.refresh_now()  # reads the file through the local transport's session
        await wait_for(pilot, lambda: pane.last_no >= 60 and len(pane.errors) >= 3, what="the log and its errors")
        view = pane.log_view
        total = len(view.lines)
        assert view.max_lines == app.cfg.ui.log_lines
        assert list(view.numbers) == list(range(1, total + 1))
        # follow / pause
        assert pane.following and view.auto_scroll
        await pilot.press("f")
        assert not pane.following and not view.auto_scroll
        await pilot.press("f")
        assert pane.following and view.auto_scroll
        # errors: marked by layer, first and next
        first = pane.errors[0]
        assert view.marks[first].layer == "app"
        assert any(m.kind == "error" and m.layer == "app" for m in view.marks.values())
        await pilot.press("E")
        assert view.current == first and not pane.following
        await pilot.press("e")
        assert view.current == pane.errors[1]
        await pilot.press("e", "e")
        assert view.current == first  # wraps around
        # filter
        await pilot.press("slash")
        inp = pane.query_one("#log-filter")
        assert inp.display and app.focused is inp
        await pilot.press(*"drafter-1", "enter")
        assert not inp.display and pane.filter == "drafter-1"
        assert view.lines and all("drafter-1" in line.lower() for line in view.lines)
        assert len(view.lines) < total
        await pilot.press("slash", "ctrl+u", "enter")  # empty: every line again
        assert pane.filter == "" and len(view.lines) == total
        await pilot.press("slash", "x", "escape")  # escape cancels the edit
        assert not inp.display and pane.filter == ""


async def test_log_batches_are_not_duplicated(tmp_path):
    app = await _app_with_log(tmp_path)
    async with app.run_test(size=SIZE):
        pane = app.query_one(LogPane)
        pane.feed("/x.log", 1, ["a", "b", "c"], [])
        pane.feed("/x.log", 2, ["b", "c", "d"], [])  # overlapping batch
        assert list(pane.log_view.lines) == ["a", "b", "c", "d"]
        pane.feed("/y.log", 1, ["new"], [])  # a new attempt's log starts over
        assert list(pane.log_view.lines) == ["new"] and pane.path == "/y.log"


# -- failures are shown, never crash --------------------------------------------------------------

class RefusingTransport(LocalTransport):
    async def run(self, command: str, *, timeout: float = 10.0, cheap: bool = False):
        raise RemoteError(Layer.SSH, "connection refused by 10.1.2.6 port 22", hint="is sshd running?")


async def test_remote_errors_show_in_the_status_line_with_their_layer(tmp_path):
    from cockpit.core.engine import Engine

    cfg = local_config(tmp_path)
    engine = Engine(cfg, transport=RefusingTransport(HostRuntime()))
    app = create_app(cfg, engine=engine, refresh=True)
    app.owns_engine = True
    async with app.run_test(size=SIZE) as pilot:
        status = app.query_one(StatusLine)
        await wait_for(pilot, lambda: "procs" in status.state.parts, what="the first procs refresh")
        text = status.render().plain
        assert "ssh ✘" not in text  # local transport: the SSH link itself is n/a …
        assert "[ssh]" in text and "connection refused" in text  # … but the error and its layer are shown
        procs = app.query_one(ProcsPane)
        await wait_for(pilot, lambda: procs.has_class("-stale"), what="the stale procs pane")
        assert "⚠" in str(procs.border_subtitle)


async def test_busy_engine_is_a_notification(tmp_path):
    rec = Recorder()
    app = app_for(tmp_path)

    async def busy(name: str, *, wait: bool = False):
        raise Busy("the target is busy: pid 1 is running attempt since 09:00:00")

    app.engine.run_action = busy  # the engine refuses (another cockpit holds the target)
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        await pilot.press("D")
        await wait_for(pilot, lambda: bool(rec.of(ActionRefused)), what="the refusal")
        assert any("busy" in n for n in notes(app))
        assert app.query_one(VerdictStrip).state == "refused"
        app.engine.current_action = "attempt"  # and while this cockpit runs one, nothing else starts
        await pilot.press("t")
        await pilot.pause()
        assert not isinstance(app.screen, HypothesisScreen)
        assert any("attempt is running" in n for n in notes(app))
        app.engine.current_action = None

async def test_keymap_remaps_and_rejects(tmp_path):
    from cockpit.core.config import parse_config

    cfg = parse_config(_with_keymap(tmp_path, '[keymap]\nzoom = "x"\nstop = "s"\nnope = "y"\n'))
    app = create_app(cfg, engine=make_engine(cfg), refresh=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        assert app.screen.maximized is not None
        await pilot.press("x")
        assert app.keymap == {"zoom": "x"}
        assert any("'nope' is not an action id" in n for n in notes(app))
        assert any("stop" in n and "home-row" in n for n in notes(app))
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        from rich.console import Console

        console = Console(width=140, record=True)
        console.print(app.screen.query_one("HelpBody").build())
        assert any(line.split()[:2] == ["x", "zoom"] for line in console.export_text().splitlines() if line.strip())


def _with_keymap(tmp_path: Path, keymap: str) -> str:
    return f"""
[target]
name = "lab"
transport = "local"
[job]
workdir = "{tmp_path}"
command = "/bin/true"
log = "{tmp_path}/logs/train-{{attempt}}.log"
[journal]
path = "{tmp_path}/journal.jsonl"
[gpu]
enabled = false
{keymap}
"""


async def test_demo_fix_is_demo_only(tmp_path):
    app = app_for(tmp_path)
    async with app.run_test(size=SIZE):
        assert app.check_action("demo_fix", ()) is False
    from cockpit.demo import demo_config, fix_applied

    demo = create_app(demo_config(), refresh=False)
    async with demo.run_test(size=SIZE) as pilot:
        assert demo.demo and demo.check_action("demo_fix", ()) is True
        await pilot.press("F")
        await wait_for(pilot, fix_applied, what="the demo fix")
        assert any("applied the demo fix" in n for n in notes(demo))


async def test_job_only_view_and_zombie_parent(tmp_path):
    from tests.test_ui_support import story_app

    app = story_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        procs = app.query_one(ProcsPane)
        await wait_for(pilot, lambda: procs.table.row_count > 0, what="the process table")
        zombie = procs.table.get_row("91451")
        assert zombie[0].plain == "Z!" and "parent 1 systemd has not reaped it" in zombie[-1].plain
        all_rows = procs.table.row_count
        await pilot.press("j")
        assert procs.job_only and 0 < procs.table.row_count < all_rows
        assert "91451" in {r.value for r in procs.table.rows} and "1" in {r.value for r in procs.table.rows}
        gpu = app.query_one(GpuPane)
        assert "held by a zombie" in gpu.findings_text().plain and "[gpu]" in gpu.findings_text().plain
        assert len(gpu.cards) == 4


async def test_engine_actions_run_through_the_engine(tmp_path):
    """clear-cache asks first, showing each path as the target resolved it; verify runs at once;
    relaunch asks first, showing the stop and the launch command."""
    rec = Recorder()
    (tmp_path / "cache-real").mkdir()
    (tmp_path / "cache-real" / "graph.bin").write_bytes(b"x" * 4096)
    (tmp_path / "cache-link-parent").symlink_to(tmp_path)
    app = app_for(tmp_path, extra=f'[cache]\npaths = ["{tmp_path}/cache-link-parent/cache-real"]\n')
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        await pilot.press("C")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), timeout=10, what="the clear-cache confirmation")
        command = str(app.screen.query_one("#confirm-command").content)
        assert f"rm -rf -- {tmp_path}/cache-real" in command and "configured as" in command, command
        assert not rec.of(ActionStarted)
        await pilot.press("y")
        await wait_for(pilot, lambda: len(rec.of(ActionFinished)) == 1, what="clear-cache")
        assert not (tmp_path / "cache-real").exists() and (tmp_path / "cache-link-parent").is_symlink()
        await pilot.press("V")
        await wait_for(pilot, lambda: len(rec.of(ActionFinished)) == 2, what="verify")
        assert [m.action for m in rec.of(ActionFinished)] == ["clear-cache", "verify"]
        verify = rec.of(ActionFinished)[1].verdict
        assert verify.layer is Layer.PROCESS and "nothing launched" in verify.summary()
        strip = app.query_one(VerdictStrip)
        # nothing was launched: no failure of the job, as outcome_of says (untested), never "FAILED"
        assert strip.banner_text() == "⊘ UNTESTED — the fix never ran (process)" and "[process]" in strip.plain()
        await pilot.press("v")  # the last action's full verdict
        await wait_for(pilot, lambda: isinstance(app.screen, VerdictScreen), what="the verdict")
        await pilot.press("escape")
        app.engine.set_job(JobRecord(attempt=2, pid=4343, pgid=4343, start_time=1, log_path=str(tmp_path / "y.log")))
        await pilot.press("L")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the relaunch confirmation")
        command = str(app.screen.query_one("#confirm-command").content)
        assert "kill -s TERM -- -4343" in command and "then launch: /bin/true" in command
        await pilot.press("escape")
        await pilot.pause()
        assert len(rec.of(ActionStarted)) == 2


def test_stylesheet_uses_variables_only():
    import re

    css = (Path(__file__).resolve().parents[1] / "cockpit" / "ui" / "styles.tcss").read_text()
    values = [line.split(":", 1)[1] for line in css.splitlines() if ":" in line and not line.strip().startswith(("/*", "#", "."))]
    values += re.findall(r"\{([^}]*)\}", css)
    assert not [v for v in values if re.search(r"#[0-9a-fA-F]{3,8}\b|rgb\(|hsl\(", v)], "colours belong in theme files"
    assert "$layer-app" in css and "$error" in css


async def test_gpu_na_values_and_failures_are_shown_as_such(tmp_path):
    from cockpit.core.observe import GPUView
    from cockpit.core.probes.gpu import parse_gpu_output
    from cockpit.ui.messages import GpuRefreshed

    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        gpu = app.query_one(GpuPane)
        lost = parse_gpu_output((FIXTURES / "gpu" / "lost_value_rc0.txt").read_text(), "", 0)
        app.post_message(GpuRefreshed(GPUView(collected_at=lost.collected_at, snapshot=lost, error=lost.error)))
        await wait_for(pilot, lambda: len(gpu.cards) == 1 and gpu.query(".gpu-util"), what="the GPU card")
        card = next(iter(gpu.cards.values()))
        await wait_for(pilot, lambda: "N/A" in str(card.query_one(".gpu-util").content), what="N/A utilisation")
        assert str(card.query_one(".gpu-mem").content) == "mem  N/A"
        assert "temp N/A" in card.head_text().plain and "power N/A" in card.head_text().plain
        assert "[gpu]" in gpu.error_text().plain + gpu.findings_text().plain
        failed = parse_gpu_output((FIXTURES / "gpu" / "driver_not_loaded_rc9.txt").read_text(), "", 9)
        app.post_message(GpuRefreshed(GPUView(collected_at=failed.collected_at, snapshot=failed, error=failed.error,
                                              error_layer=Layer.GPU)))
        await wait_for(pilot, lambda: not gpu.cards, what="the card to go")
        text = gpu.error_text().plain
        assert text.startswith("✘ [gpu]") and "NVIDIA-SMI has failed" in text


async def test_a_launch_from_the_journal_reads_no_verdict_yet_with_its_jobs_end_not_an_action_running(tmp_path):
    # `cockpit launch` journals an attempt with the outcome running ("no verdict yet"); its job was
    # stopped since.  At start-up the strip read "▶ attempt RUNNING", as if an action ran, and kept it
    from cockpit.core.journal import Journal
    from cockpit.core.layers import Outcome

    cfg = local_config(tmp_path)
    j = Journal(cfg.journal_path)
    aid = j.start_attempt("launch", "lab")
    j.finish_attempt(aid, Outcome.RUNNING, summary="launched; no verdict")
    j.record(aid, "fate", state="stopped", cause="by cockpit (stopped with TERM)", at=1.0)
    app = app_for(tmp_path, cfg=cfg)
    async with app.run_test(size=SIZE) as pilot:
        strip = app.query_one(VerdictStrip)
        refresh = app.refresh_now()
        await wait_for(pilot, lambda: strip.attempt == aid, what="the journal's last attempt on the strip")
        await refresh.wait()  # its probes' shell commands end before the app does
        assert "RUNNING — no verdict yet" in strip.banner_text() and "→ stopped" in strip.banner_text(), strip.banner_text()
        assert not strip.banner_text().startswith("▶ attempt RUNNING")
        strip.start("attempt", "a real one")  # an action of this cockpit: running, and the journal does not replace it
        aid2 = j.start_attempt("another", "lab")
        j.finish_attempt(aid2, Outcome.PASSED)
        strip.show_record(j.get(aid2))
        assert strip.banner_text() == "▶ attempt RUNNING" and strip.attempt is None


async def test_the_strip_tells_a_passed_attempts_job_dying_after_the_verdict(tmp_path):
    # the banner kept "✔ PASSED" over a job that had died since; only a toast and the attempts pane said so
    from cockpit.core.events import FateChanged as CoreFateChanged
    from cockpit.core.fate_record import Fate
    from cockpit.core.layers import Verdict
    from cockpit.ui.messages import FateChanged

    app = app_for(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        strip = app.query_one(VerdictStrip)
        strip.finish("attempt", Verdict("attempt"), outcome="passed", attempt=3, duration_s=12.0)
        assert strip.banner_text().startswith("✔ PASSED") and "→" not in strip.banner_text()
        app.post_message(FateChanged(CoreFateChanged(4, Fate("died", "app", "RuntimeError: x", 1.0, 30.0), "passed")))
        app.post_message(FateChanged(CoreFateChanged(3, Fate("died", "app", "RuntimeError: loss is NaN", 1.0, 252.0), "passed")))
        await wait_for(pilot, lambda: "→" in strip.banner_text(), what="the job's end on the strip")
        assert strip.banner_text().endswith("→ died (app) after 4m12s"), strip.banner_text()  # attempt 4's is not this one's
        strip.start("attempt", "the next one")  # a new action: its own banner, no story of the last one
        assert strip.banner_text() == "▶ attempt RUNNING"


async def test_a_job_s_fate_arriving_after_the_strip_is_gone_is_no_crash(tmp_path):
    """The fate follower posts whenever the job changes; when the app is closing its panes are already
    pruned, and the late message must do nothing (it crashed the app on its way out)."""
    from cockpit.core.events import FateChanged as CoreFateChanged
    from cockpit.core.fate_record import Fate
    from cockpit.ui.messages import FateChanged

    app = app_for(tmp_path)
    handled: list[Any] = []
    async with app.run_test(size=SIZE, message_hook=lambda m: handled.append(m) if isinstance(m, FateChanged) else None) as pilot:
        await app.query_one(VerdictStrip).remove()
        app.post_message(FateChanged(CoreFateChanged(2, Fate("died", "app", "RuntimeError: x", 1.0, 30.0), "passed")))
        await wait_for(pilot, lambda: bool(handled), what="the late fate handled")
        await pilot.pause()
    assert app._exception is None and app.return_code in (0, None)
