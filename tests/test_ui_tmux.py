"""End to end: ``python -m cockpit --demo`` in a real terminal (tmux, 256 colours, no mouse).

A private tmux server (``tmux -L cockpit-test-<pid>``) runs the demo in a 120x40 window; the test
waits for the first frame (the four pane titles on screen), opens help, closes it, quits, and
checks the screen with ``tmux capture-pane -p`` at each step.  XDG dirs point into the test's
temporary directory.  The time to the first frame is printed (``pytest -s``) and bounded.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lab.util import WaitTimeout, wait_for

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    def __init__(self) -> None:
        self.socket = f"cockpit-test-{os.getpid()}"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True,
                              check=check, timeout=20)

    def screen(self) -> str:
        r = self("capture-pane", "-p", "-t", "main", check=False)
        return r.stdout if r.returncode == 0 else ""

    def alive(self) -> bool:
        return self("has-session", "-t", "main", check=False).returncode == 0

    def wait(self, pred, timeout: float, what: str) -> str:
        last = {"screen": ""}

        def shown() -> bool:
            last["screen"] = self.screen()
            return pred(last["screen"])

        try:
            wait_for(shown, timeout=timeout, interval=0.05)
        except WaitTimeout:
            raise AssertionError(f"timed out waiting for {what}; screen:\n{last['screen']}") from None
        return last["screen"]


def test_demo_runs_in_tmux(tmp_path):
    tmux = Tmux()
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
        "TEXTUAL_ANIMATIONS": "none",
    }
    cmd = "env -u COLORTERM -u COLUMNS -u LINES " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + \
        f" {shlex.quote(sys.executable)} -m cockpit --demo; sleep 0.2"
    try:
        t0 = time.monotonic()
        tmux("new-session", "-d", "-s", "main", "-x", "120", "-y", "40", "-c", str(tmp_path), cmd)
        tmux("set-option", "-g", "escape-time", "10", check=False)
        titles = ("processes [1]", "log [2]", "GPUs [3]", "attempts [4]", "Attempt", "palette")  # panes and footer
        screen = tmux.wait(lambda s: all(t in s for t in titles), 30, "the first frame")
        first_frame = time.monotonic() - t0
        print(f"\ncockpit --demo: first frame in tmux after {first_frame:.2f}s")
        assert first_frame < 15
        assert "demo" in screen.splitlines()[0]  # the status line names the target
        size = tmux("display-message", "-p", "-t", "main", "#{pane_width}x#{pane_height}").stdout.strip()
        assert size == "120x40"

        tmux("send-keys", "-t", "main", "?")
        # a capture can land in the middle of a redraw: wait for everything expected at once
        tmux.wait(lambda s: all(x in s for x in ("cockpit help", "attempt", "reboot", "zoom", "esc: close")), 10,
                  "the help screen")

        tmux("send-keys", "-t", "main", "Escape")
        tmux.wait(lambda s: "cockpit help" not in s and "processes [1]" in s, 10, "help to close")

        tmux("send-keys", "-t", "main", "z")  # zoom the log, then back
        tmux.wait(lambda s: "log [2]" in s and "processes [1]" not in s, 10, "the zoomed log")
        tmux("send-keys", "-t", "main", "z")
        tmux.wait(lambda s: "processes [1]" in s, 10, "the zoom to end")

        tmux("send-keys", "-t", "main", "q")
        def quit_cleanly() -> bool:
            if "Traceback" in tmux.screen():
                raise AssertionError(tmux.screen())
            return not tmux.alive()

        try:
            wait_for(quit_cleanly, timeout=15, interval=0.05)
        except WaitTimeout:
            raise AssertionError("cockpit did not quit on q") from None
    finally:
        tmux("kill-server", check=False)
