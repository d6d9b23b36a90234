"""Verdict notifications: the one-line message, the bell, and a real private tmux server."""

from __future__ import annotations

import io
import os
import pty
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cockpit.core.engine import AttemptResult
from cockpit.core.layers import Layer, Outcome, Stage, Status, Verdict
from cockpit.core.notify import TMUX_OPTION, notify_verdict, verdict_line
from tests.lab.util import wait_for

ROOT = Path(__file__).resolve().parents[1]
FX = "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function."


def failed_result(attempt: int = 4, line: str = FX) -> AttemptResult:
    v = Verdict("attempt")
    v.add(Stage("verify: progress", Status.FAIL, Layer.APP, "the job crashed"))
    v.finish()
    return AttemptResult(attempt, Outcome.FAILED, v, {"label": "FX/dynamo race", "line": line, "layer": "app"})


def test_verdict_lines():
    assert verdict_line(failed_result()) == f"cockpit: attempt 4 FAILED (app): {FX}"
    passed = {"attempt": 5, "outcome": "passed", "layer": None, "summary": "attempt: ok", "first_error": None}
    assert verdict_line(passed) == "cockpit: attempt 5 PASSED"
    untested = {"attempt": 6, "outcome": "untested", "layer": "ssh",
                "summary": "attempt: ssh failed at connect: ssh: connection refused\nmore", "first_error": None}
    assert verdict_line(untested) == "cockpit: attempt 6 UNTESTED (ssh): ssh failed at connect: ssh: connection refused more"
    long = verdict_line(failed_result(line="E" * 500 + "\x1b[31m"))
    assert len(long) == 200 and long.endswith("…") and "\x1b" not in long


def test_verdict_line_from_a_journal_record(tmp_path: Path):
    from cockpit.core.journal import Journal

    j = Journal(tmp_path / "journal.jsonl")
    aid = j.start_attempt("h", "t")
    j.finish_attempt(aid, "failed", layer="app", summary="x", first_error={"line": "ImportError: no module named drafter"})
    assert verdict_line(j.get(aid)) == "cockpit: attempt 1 FAILED (app): ImportError: no module named drafter"


def test_bell_and_no_tmux_outside_tmux():
    s = io.StringIO()
    done = notify_verdict(failed_result(), stream=s, env={"PATH": os.environ.get("PATH", "")})
    assert s.getvalue() == "\a" and done["bell"] and done["tmux"] == [] and not done["errors"]
    s2 = io.StringIO()
    off = notify_verdict(failed_result(), stream=s2, read_only=True, env={"TMUX": "/nonexistent,1,0"})
    assert s2.getvalue() == "" and off["skipped"] == "read-only" and not off["bell"]
    quiet = notify_verdict(failed_result(), bell=False, stream=s2, env={})
    assert s2.getvalue() == "" and not quiet["bell"]


def test_missing_or_failing_tmux_never_raises(tmp_path: Path):
    s = io.StringIO()
    done = notify_verdict(failed_result(), stream=s, env={"TMUX": "/nonexistent,1,0", "PATH": str(tmp_path)})
    assert done["bell"] and done["errors"] == ["tmux: not found on PATH"]
    if shutil.which("tmux"):
        env = {"TMUX": str(tmp_path / "no-such-socket") + ",1,0", "TMUX_PANE": "%0", "PATH": os.environ["PATH"]}
        done = notify_verdict(failed_result(), stream=s, env=env)
        assert done["tmux"] == [] and len(done["errors"]) == 2


class PrivateTmux:
    """A tmux server on its own socket, with one client attached through a pty (messages shown
    with display-message only reach the message log when a client is attached)."""

    def __init__(self) -> None:
        self.name = f"test-{os.getpid()}"
        self.client: subprocess.Popen | None = None
        self.master = -1

    def tmux(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.name, *args], capture_output=True, text=True, timeout=10)

    def __enter__(self) -> PrivateTmux:
        r = self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "30")
        assert r.returncode == 0, r.stderr
        self.socket, self.pane = self.tmux("display-message", "-p", "-t", "t", "#{socket_path}\t#{pane_id}").stdout.strip().split("\t")
        self.master, slave = pty.openpty()
        env = dict(os.environ, TERM="xterm")
        env.pop("TMUX", None)
        self.client = subprocess.Popen(["tmux", "-L", self.name, "attach", "-t", "t"], stdin=slave, stdout=slave, stderr=slave,
                                       env=env, start_new_session=True)
        os.close(slave)
        threading.Thread(target=self._drain, daemon=True).start()
        wait_for(lambda: "attached" in self.tmux("list-clients").stdout, 10, "the tmux client to attach")
        return self

    def _drain(self) -> None:
        try:
            while os.read(self.master, 65536):
                pass
        except OSError:
            pass

    def __exit__(self, *exc) -> None:
        self.tmux("kill-server")
        if self.client is not None:
            try:
                self.client.wait(10)
            except subprocess.TimeoutExpired:
                self.client.kill()
                self.client.wait()
        try:
            os.close(self.master)
        except OSError:
            pass


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_notification_reaches_tmux(tmp_path: Path):
    marker = tmp_path / "pwned"
    hostile = f"RuntimeError: boom #(touch {marker}) #{{pane_id}}"
    with PrivateTmux() as t:
        env = dict(os.environ, TMUX=f"{t.socket},{os.getpid()},0", TMUX_PANE=t.pane,
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        code = (
            "import json, sys\n"
            "from cockpit.core.notify import notify_verdict\n"
            f"r = {{'attempt': 4, 'outcome': 'failed', 'layer': 'app', 'first_error': {{'line': {hostile!r}}}}}\n"
            "print(json.dumps(notify_verdict(r, stream=sys.stdout)))\n"
        )
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert '"display-message", "set-option"' in r.stdout and '"errors": []' in r.stdout
        want = f"cockpit: attempt 4 FAILED (app): {hostile}"
        assert len(want) < 200
        msgs = wait_for(lambda: [ln for ln in t.tmux("show-messages").stdout.splitlines() if " message: cockpit:" in ln],
                        10, "the message in tmux's message log")
        assert msgs[-1].split(" message: ", 1)[1] == want  # shown literally: #(…) was not run
        assert t.tmux("show-options", "-w", "-v", "-t", t.pane, TMUX_OPTION).stdout.strip() == want
        assert not marker.exists()
