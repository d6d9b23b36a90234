"""The picker of ``cockpit init``/``cockpit connect``: targets, then the chosen target's jobs, each
row's evidence in the detail panel; pilot tests on a report parsed from captured discovery
output, and one real terminal (tmux) running ``cockpit init`` against the lab."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.widgets import OptionList, Static

from cockpit.cli.discover import choose_here
from cockpit.core.config import load_config
from cockpit.core.discover import Candidate, parse_report, rank
from cockpit.ui.screens.picker import PickerApp
from tests import test_discover_lab as dl
from tests.lab import Lab
from tests.lab.util import WaitTimeout, wait_for
from tests.test_discover_units import CAPTURED, _job
from tests.test_ui_support import wait_for as pilot_wait

SIZE = (140, 40)
scene = dl.scene  # the lab with a job in 200, a job writing to a pipe, a GPU container, a docker container
HOSTILE = ["python3", "tr\x1b[31mred.py", "[bold]boom[/bold]", "[link=http://evil]click[/link]", "\x1b]0;title\x07"]


def _cands(text: str = CAPTURED) -> list[Candidate]:
    return rank(parse_report(text, "gpu1"))


def _rows(app: PickerApp) -> list[str]:
    ol = app.query_one("#picker-list", OptionList)
    return [str(ol.get_option_at_index(i).prompt) for i in range(ol.option_count)]


def _detail(app: PickerApp) -> str:
    """The detail panel as it is drawn (cells, not the source text)."""
    d = app.query_one("#picker-detail", Static)
    return "\n".join("".join(seg.text for seg in strip) for strip in d.render_lines(Region(0, 0, d.size.width, d.size.height)))


async def test_targets_then_jobs_then_the_choice() -> None:
    cands = _cands()
    app = PickerApp(cands, host="gpu1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: len(_rows(app)) == 6, what="the six targets")
        rows = _rows(app)
        assert rows[0].startswith("pct 200 (trainer)") and "1 job(s)" in rows[0] and "1 zombie(s)" in rows[0]
        assert any(r.startswith("pct 202 (gpu-box)") and "GPU 3 line(s)" in r for r in rows)
        assert any(r.startswith("pct 201 (old)") and "[stopped]" in r for r in rows)
        assert "targets on gpu1" in str(app.query_one("#picker-title", Static).content)
        shown = _detail(app)
        assert "pct 200 (trainer)" in shown and "jobs: 1" in shown and "WARNING: 1 zombie" in shown
        await pilot.press("j")
        await pilot_wait(pilot, lambda: "dev0: /dev/nvidia0" in _detail(app), what="the GPU lines of 202")
        await pilot.press("k", "enter")
        await pilot_wait(pilot, lambda: bool(_rows(app)) and "4242" in _rows(app)[0], what="the jobs of 200")
        assert len(_rows(app)) == 1 and "python3 train.py --lr 3e-4" in _rows(app)[0]
        shown = _detail(app)
        for fact in ("argv: python3 train.py --lr 3e-4", "cwd: /w", "user: alice", "started: 2023-11-", "output: file (/w/train.log)",
                     "env: CUDA_VISIBLE_DEVICES=0,1", "workers: 4250", "WARNING: 1 zombie child(ren): 99 python3"):
            assert fact in shown, (fact, shown)
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.return_value is not None, what="the choice")
    assert app.return_value is cands[0]
    assert app.return_value.target.container == "200" and app.return_value.job is not None and app.return_value.job.pid == 4242


async def test_escape_goes_back_a_level_then_quits_with_nothing() -> None:
    app = PickerApp(_cands())
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: len(_rows(app)) == 6, what="the targets")
        await pilot.press("down", "enter")
        await pilot_wait(pilot, lambda: bool(_rows(app)) and "run.py" in _rows(app)[0], what="the jobs of 202")
        assert "output: pipe" in _detail(app) and "env: unreadable" in _detail(app)
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: len(_rows(app)) == 6, what="the targets again")
        assert app.query_one("#picker-list", OptionList).highlighted == 1  # back on the target it came from
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: not app.is_running, what="the app to quit")
    assert app.return_value is None


async def test_q_quits_with_nothing_from_the_jobs() -> None:
    app = PickerApp(_cands())
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: len(_rows(app)) == 6, what="the targets")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: "4242" in _rows(app)[0], what="the jobs")
        await pilot.press("q")
        await pilot_wait(pilot, lambda: not app.is_running, what="the app to quit")
    assert app.return_value is None


async def test_a_target_without_a_job_is_chosen_as_it_is() -> None:
    cands = _cands()
    app = PickerApp(cands)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: len(_rows(app)) == 6, what="the targets")
        host = next(i for i, r in enumerate(_rows(app)) if r.startswith("the host"))
        await pilot.press(*["j"] * host)
        await pilot_wait(pilot, lambda: "jobs: none found" in _detail(app), what="the host's evidence")
        assert "WARNING: 1 zombie process(es): 77 defunct-thing" in _detail(app)
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: not app.is_running, what="the choice")
    assert app.return_value is not None and app.return_value.target.runtime == "none" and app.return_value.job is None
    assert app.return_value in cands


async def test_one_target_with_several_jobs_starts_at_its_jobs() -> None:
    text = CAPTURED.replace("@@ target pct 202\n", "@@ target pct 202\n" + _job(8, 1, argv=["python3", "eval.py"], cwd="/srv") + "\n")
    cands = [c for c in _cands(text) if c.target.container == "202"]
    app = PickerApp(cands)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: len(_rows(app)) == 2, what="the two jobs of 202")
        assert "jobs in pct 202 (gpu-box)" in str(app.query_one("#picker-title", Static).content)
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: not app.is_running, what="the app to quit")
    assert app.return_value is None


async def test_a_hostile_argv_is_shown_verbatim_and_inert() -> None:
    text = CAPTURED.replace("@@ target pct 200\n", "@@ target pct 200\n" + _job(66, 1, argv=HOSTILE, env="EVIL=[red]x[/red]\x1f") + "\n")
    app = PickerApp(_cands(text))
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: bool(_rows(app)), what="the targets")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: any(r.lstrip().startswith("66 ") for r in _rows(app)), what="the hostile job")
        i = next(i for i, r in enumerate(_rows(app)) if r.lstrip().startswith("66 "))
        await pilot.press(*["j"] * i)
        await pilot_wait(pilot, lambda: "pid 66 " in _detail(app), what="its evidence")
        shown, row = _detail(app), _rows(app)[i]
        for s in (shown, row):
            assert "[bold]boom[/bold]" in s and "[link=http://evil]click[/link]" in s, s
            assert "\x1b" not in s and "\x07" not in s
        assert "red.py" in shown and "EVIL=[red]x[/red]" in shown
        source = str(app.query_one("#picker-detail", Static).content)
        assert "\x1b" not in source and "[bold]boom[/bold]" in source
        await pilot.press("q")


def test_without_a_terminal_the_numbered_choice_stays() -> None:
    """Under pytest stdin is no terminal: never the picker; --yes takes the best, else nothing (the caller says why)."""
    cands = _cands()
    assert not sys.stdin.isatty()
    assert choose_here(cands, yes=True) is cands[0]
    assert choose_here(cands, yes=False) is None
    assert choose_here(cands[:1], yes=False) is cands[0]


class _Term:
    """A tmux session running one command; its screen is read until a condition holds."""

    def __init__(self, name: str) -> None:
        self.sock = f"cockpit-picker-{name}"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", *args], capture_output=True, text=True, check=check, timeout=20)

    def wait(self, pred, timeout: float, what: str) -> str:  # type: ignore[no-untyped-def]
        last = {"s": ""}

        def seen() -> bool:
            r = self("capture-pane", "-p", "-t", "main", check=False)
            last["s"] = r.stdout if r.returncode == 0 else ""
            return bool(pred(last["s"]))

        try:
            wait_for(seen, timeout=timeout, interval=0.1)
        except WaitTimeout:
            raise AssertionError(f"timed out waiting for {what}; screen:\n{last['s']}") from None
        return last["s"]

    def start_init(self, lab: Lab, out: Path) -> str:
        argv = [str(shutil.which("cockpit")), "init", "root@127.0.0.1", "--port", str(lab.port), "--identity", str(lab.identity_file),
                "--known-hosts", str(lab.known_hosts), "-o", str(out)]
        cmd = "env TEXTUAL_ANIMATIONS=none " + shlex.join(argv) + "; echo EXIT=$?; sleep 60"
        self("new-session", "-d", "-s", "main", "-x", "160", "-y", "45", "-c", str(out.parent), cmd)
        return self.wait(lambda s: "targets on 127.0.0.1" in s and f"pct {dl.PIPE_CT}" in s, 90, "the picker's targets")


NEEDS_TMUX = pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("cockpit") is None, reason="needs tmux and the cockpit command")


@NEEDS_TMUX
def test_cockpit_init_on_a_terminal_shows_the_picker_and_writes_the_choice(scene: Lab, tmp_path: Path) -> None:
    out, term = tmp_path / "picked.toml", _Term(tmp_path.name)
    try:
        screen = term.start_init(scene, out)
        assert "pct 200 (ct200)" in screen and "Esc back" in screen
        first = next(ln for ln in screen.splitlines() if "job(s)" in ln)
        assert "pct 200" in first, screen  # best first: the torch job writing to a file
        term("send-keys", "-t", "main", "Enter")
        screen = term.wait(lambda s: "jobs in pct 200" in s and "argv:" in s, 30, "the jobs of 200")
        assert "train.py" in screen and "CUDA_VISIBLE_DEVICES=0" in screen and "output: file" in screen
        term("send-keys", "-t", "main", "Enter")
        screen = term.wait(lambda s: "EXIT=" in s, 60, "cockpit init to finish")
        assert "EXIT=0" in screen and "wrote" in screen, screen
        cfg = load_config(out)
        assert str(cfg.target.container) == "200" and "train.py" in (cfg.job.command or "")
    finally:
        term("kill-server", check=False)


@NEEDS_TMUX
def test_leaving_the_picker_writes_nothing_and_says_so(scene: Lab, tmp_path: Path) -> None:
    out, term = tmp_path / "left.toml", _Term(tmp_path.name)
    try:
        term.start_init(scene, out)
        term("send-keys", "-t", "main", "Escape")
        screen = term.wait(lambda s: "EXIT=" in s, 30, "cockpit init to finish")
        assert "EXIT=1" in screen and "nothing chosen" in screen, screen
        assert not out.exists()
    finally:
        term("kill-server", check=False)
