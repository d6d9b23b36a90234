"""``y`` copies the focused thing; ``m`` switches mouse capture.

Pilot tests read what the app sent with OSC 52 from ``App.clipboard`` (Textual keeps the last text
given to ``copy_to_clipboard``; a real clipboard cannot be read here).  The end-to-end test runs
cockpit in a real terminal (tmux with ``set-clipboard on``), presses ``E`` then ``y``, and reads the
text back from tmux's paste buffer: the OSC 52 bytes really left the app and tmux decoded them.  It
also reads the terminal's mouse-reporting mode (``#{mouse_any_flag}``) before and after ``m``.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.journal.export import render_markdown
from cockpit.core.layers import Evidence, Layer, Stage, Status, Verdict
from cockpit.core.probes.classifier import classify_lines
from cockpit.ui.copy import Copied, deliver, sanitize_copy
from cockpit.ui.panes import GpuPane, HistoryPane, LogPane, ProcsPane
from cockpit.ui.screens import VerdictScreen
from tests.lab.util import WaitTimeout
from tests.lab.util import wait_for as wait_until
from tests.test_ui_support import FIXTURES, story_app, wait_for

SIZE = (120, 40)
ROOT = Path(__file__).resolve().parents[1]
RANKS = FIXTURES / "logs" / "torchrun_ranks.log"


def notes(app: Any) -> list[str]:
    return [n.message for n in app._notifications]


def ranks_app(tmp_path: Path) -> Any:
    from tests.test_ui_search import log_app

    app, _ = log_app(tmp_path, RANKS.read_text().splitlines())
    return app


def tracebacks() -> dict[str, str]:
    """The torchrun log's tracebacks as the core assembles them, by rank."""
    c = classify_lines(RANKS.read_text().splitlines())
    return {m.traceback[0].split(":")[0]: "\n".join(m.traceback) for m in c.matches if m.traceback}


# -- the log pane ---------------------------------------------------------------------------------

async def test_y_copies_the_clicked_line_or_its_whole_traceback(tmp_path):
    app = ranks_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        app.refresh_now()
        await wait_for(pilot, lambda: pane.last_no >= 16 and len(pane.errors) >= 2, what="the log and its tracebacks")
        view = pane.log_view
        await pilot.press("y")  # nothing selected yet
        assert app.clipboard == "" and "no log line selected: n / N, e / E or a click selects one" in notes(app)
        # a click on line 7 ("[rank1]:     loss.backward()", between rank0's lines) selects it
        y = view.row_of(7) - int(view.scroll_offset.y)
        await pilot.click("#log-view", offset=(12, y))
        assert view.current == 7 and not pane.following
        await pilot.press("y")
        want = tracebacks()["[rank1]"]
        assert app.clipboard == want  # only rank1's lines, as the classifier assembled them
        assert "[rank0]" not in app.clipboard
        assert notes(app)[-1] == f"copied traceback, 6 lines, {len(want.encode())} B"
        # E: the first error (rank0's traceback starts it)
        await pilot.press("E")
        await pilot.press("y")
        assert app.clipboard == tracebacks()["[rank0]"]
        # a line outside any traceback: just that line
        await pilot.click("#log-view", offset=(12, view.row_of(14) - int(view.scroll_offset.y)))
        await pilot.press("y")
        line = RANKS.read_text().splitlines()[13]
        assert app.clipboard == line
        assert notes(app)[-1] == f"copied log line 14, 1 line, {len(line.encode())} B"


async def test_copied_text_is_sanitized_and_share_mode_without_redaction_refuses(tmp_path):
    app = ranks_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        evil = "ok\x1b]52;c;cm0gLXJmIH4=\x07 then \x1b[31mred\x1b[0m\r\nnext\x00line"
        assert sanitize_copy(evil) == "ok then red\nnext␀line"
        deliver(app, Copied("test", evil))
        assert app.clipboard == "ok then red\nnext␀line"
        assert "\x1b" not in app.clipboard and "\x07" not in app.clipboard
        # share mode: the one hook (copy.redact_copied) must redact; without a redactor nothing leaves
        app.share = True
        deliver(app, Copied("test", "secret token abc"))
        assert app.clipboard == "ok then red\nnext␀line"
        await wait_for(pilot, lambda: bool(notes(app)), what="the toast")
        assert notes(app)[-1] == "share mode: copying is off until copied text can be redacted"


# -- attempts, verdicts, findings ------------------------------------------------------------------------

async def test_y_copies_the_selected_attempt_as_markdown(tmp_path):
    app = story_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        hist = app.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(hist.records) == 3, what="the history")
        await pilot.press("4")
        sel = hist.selected()
        assert sel is not None
        await pilot.press("y")
        rec = hist.record(sel)
        assert app.clipboard == sanitize_copy(render_markdown([rec], title=f"cockpit attempt #{sel}"))
        assert f"## Attempt {sel}:" in app.clipboard and rec.note in app.clipboard
        assert notes(app)[-1].startswith(f"copied attempt #{sel} as Markdown, ")
        await pilot.press("down")
        other = hist.selected()
        assert other != sel
        await pilot.press("y")
        assert f"## Attempt {other}:" in app.clipboard


async def test_y_in_the_verdict_screen_copies_the_verdict_with_its_evidence(tmp_path):
    app = story_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        hist = app.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(hist.records) == 3, what="the history")
        # an attempt's verdict: its Markdown (stages, first error with its traceback)
        app.push_screen(app.views.verdict_screen(hist.record(1)))
        await wait_for(pilot, lambda: isinstance(app.screen, VerdictScreen), what="the verdict screen")
        await pilot.press("y")
        assert "## Attempt 1: failed — the code ran and failed (app)" in app.clipboard and "verify: alive" in app.clipboard
        assert "RuntimeError: Detected that you are using FX to symbolically trace" in app.clipboard
        assert notes(app)[-1].startswith("copied verdict of attempt #1, ")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, VerdictScreen), what="the attempt's verdict screen to close")
        # an action's verdict: its stages and the failing stage's evidence
        v = Verdict(action="verify", stages=[
            Stage("alive", Status.OK, Layer.PROCESS, "pid 4242"),
            Stage("log created", Status.FAIL, Layer.PROCESS, "/workspace/train.log not created within 30s",
                  evidence=Evidence("test -e /workspace/train.log", 1, "no such file\n"), advice="check [job] log"),
        ])
        action_screen = VerdictScreen(None, verdict=v, action="verify")
        app.push_screen(action_screen)
        await wait_for(pilot, lambda: app.screen is action_screen, what="the action's verdict screen")
        await pilot.press("y")
        text = app.clipboard
        assert "verify: FAILED at layer process" in text and "advice: check [job] log" in text
        assert "**Evidence** of the failing stage (log created):" in text
        assert "$ test -e /workspace/train.log\nexit code 1\nno such file" in text


async def test_y_copies_a_process_finding_and_the_gpu_findings(tmp_path):
    app = story_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        procs = app.query_one(ProcsPane)
        await wait_for(pilot, lambda: procs.table.row_count > 0, what="the process table")
        await pilot.press("1")
        table = procs.table
        zombie = next(f for f in procs.view.findings if f.kind.startswith("zombie"))
        pid = zombie.subject["pid"]
        table.move_cursor(row=table.get_row_index(str(pid)))
        await pilot.press("y")
        assert zombie.summary in app.clipboard and app.clipboard.startswith("error [container]")
        assert notes(app)[-1].startswith(f"copied finding about pid {pid}, ")
        # a process no finding is about: the process itself
        plain = next(p for p in procs.view.procs if not any(p.pid in (f.subject.get("pid"), f.subject.get("ppid"))
                                                             for f in procs.view.findings))
        table.move_cursor(row=table.get_row_index(str(plain.pid)))
        await pilot.press("y")
        assert app.clipboard.startswith(f"pid {plain.pid} ppid {plain.ppid}")
        # the GPU pane has no selection: its findings
        gpu = app.query_one(GpuPane)
        await pilot.press("3")
        await pilot.press("y")
        findings = gpu.view.snapshot.findings
        assert findings and all(f.summary in app.clipboard for f in findings)
        assert notes(app)[-1].startswith("copied GPU findings, ")


async def test_m_switches_mouse_capture_and_says_so(tmp_path):
    app = story_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        assert app.mouse_reporting
        await pilot.press("m")
        assert app.mouse_reporting is False
        assert notes(app)[-1].startswith("mouse capture off: select text with the terminal's mouse")
        await pilot.press("m")
        assert app.mouse_reporting is True and notes(app)[-1].startswith("mouse capture on")


# -- a real terminal: tmux reads the OSC 52 bytes ----------------------------------------------------------

APP_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from cockpit.core.actions.job import JobRecord
from cockpit.ui.app import create_app
from tests.test_ui_support import local_config, make_engine

tmp = Path({tmp!r})
cfg = local_config(tmp)
app = create_app(cfg, engine=make_engine(cfg), refresh=True)
app.owns_engine = True
app.engine.set_job(JobRecord(attempt=1, pid=None, pgid=None, log_path={log!r}))
app.run()
"""


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_y_reaches_tmux_as_osc52_and_m_switches_the_terminal_mouse_mode(tmp_path):
    from tests.test_ui_tmux import Tmux

    log = tmp_path / "logs" / "train-1.log"
    log.parent.mkdir(parents=True)
    log.write_text(RANKS.read_text())
    script = tmp_path / "run_app.py"
    script.write_text(APP_SCRIPT.format(root=str(ROOT), tmp=str(tmp_path), log=str(log)))
    tmux = Tmux()
    env = f"XDG_CONFIG_HOME={shlex.quote(str(tmp_path / 'config'))} XDG_CACHE_HOME={shlex.quote(str(tmp_path / 'cache'))} TEXTUAL_ANIMATIONS=none"
    cmd = f"env -u COLORTERM -u COLUMNS -u LINES -u TMUX {env} {shlex.quote(sys.executable)} {shlex.quote(str(script))}; sleep 0.2"
    try:
        tmux("new-session", "-d", "-s", "main", "-x", "120", "-y", "40", "-c", str(tmp_path), cmd)
        tmux("set-option", "-s", "set-clipboard", "on")
        tmux("set-option", "-g", "escape-time", "10", check=False)
        tmux.wait(lambda s: "log [2]" in s and "errors" in s, 30, "the log with its classified errors")

        def mouse_any() -> str:
            return tmux("display-message", "-p", "-t", "main", "#{mouse_any_flag}").stdout.strip()

        assert mouse_any() == "1"  # Textual asks for every mouse event
        tmux("send-keys", "-t", "main", "E")
        tmux.wait(lambda s: "▶" in s or "PAUSED" in s, 10, "the jump to the first error")
        tmux("send-keys", "-t", "main", "y")
        want = tracebacks()["[rank0]"]

        def buffer() -> str:
            r = tmux("show-buffer", check=False)
            return r.stdout if r.returncode == 0 else ""

        try:
            wait_until(lambda: buffer() == want, timeout=10, interval=0.05)
        except WaitTimeout:
            raise AssertionError(f"tmux's paste buffer did not get the traceback: {buffer()!r}\n{tmux.screen()}") from None
        tmux.wait(lambda s: "copied traceback, 6 lines" in s, 10, "the toast")

        tmux("send-keys", "-t", "main", "m")
        try:
            wait_until(lambda: mouse_any() == "0", timeout=10, interval=0.05)
        except WaitTimeout:
            raise AssertionError(f"mouse reporting still on after m: {mouse_any()}\n{tmux.screen()}") from None
        tmux("send-keys", "-t", "main", "m")
        wait_until(lambda: mouse_any() == "1", timeout=10, interval=0.05)
        tmux("send-keys", "-t", "main", "q")
        wait_until(lambda: not tmux.alive(), timeout=15, interval=0.05)
    finally:
        tmux("kill-server", check=False)
