"""``cockpit connect`` against the lab: discovery, the config, the adoption (headless, through
:func:`cockpit.cli.connect.prepare`), and the TUI in a real terminal (tmux) showing the adopted
job's live log lines, timed beside a plain ``ssh … pct exec … tail``."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cockpit.cli.connect import ConnectError, prepare
from cockpit.core.journal import Journal
from tests.lab import Lab, wait_for

CT = 200
ROOT = Path(__file__).resolve().parents[1]
STEP = re.compile(r"step (\d+) loss")


@pytest.fixture
def hand_job(lab: Lab) -> Iterator[tuple[int, Path]]:
    """``python3 train_connect.py`` (the jobsim; its argv names training) started by hand in
    container 200, its output redirected to ``connect.log`` by the shell; killed after."""
    ws = lab.workspace(CT)
    script, log, pidf = ws / "train_connect.py", ws / "connect.log", ws / "connect.pid"
    with contextlib.suppress(FileNotFoundError):
        script.unlink()
    script.symlink_to(lab.jobsim)
    for f in (log, pidf):
        f.unlink(missing_ok=True)
    py = lab.jobsim_argv()[0]
    lab.exec_in(CT, f"cd {ws} && setsid {py} train_connect.py --steps 0 --interval 0.2 > {log} 2>&1 < /dev/null & echo $! > {pidf}",
                check=True)
    wait_for(lambda: pidf.exists() and pidf.read_text().strip().isdigit() and log.exists() and "step" in log.read_text(), 20,
             message="the hand-started job's first step")
    pid = int(pidf.read_text())
    yield pid, log
    lab.exec_in(CT, f"kill -9 {pid} 2>/dev/null")


def _args(lab: Lab, out: Path) -> argparse.Namespace:
    return argparse.Namespace(where=f"root@127.0.0.1:{CT}", output=str(out), port=lab.port, identity=str(lab.identity_file),
                              known_hosts=str(lab.known_hosts), yes=True, timeout=60.0)


def test_prepare_writes_the_config_and_adopts_the_job(lab: Lab, hand_job: tuple[int, Path], tmp_path: Path) -> None:
    pid, log = hand_job
    out = tmp_path / "cockpit.toml"
    done = prepare(_args(lab, out))
    assert done.written and done.path == out and out.exists()
    assert (done.cfg.target.port, done.cfg.target.container) == (lab.port, CT)
    assert done.pid == pid and done.verdict is not None and done.verdict.failed_stage is None, done.verdict and done.verdict.to_dict()
    stages = {s.name: s for s in done.verdict.stages}
    assert stages["verify: alive"].status.value == "ok" and stages["verify: log growing"].status.value == "ok"
    assert "{attempt}" in out.read_text()  # the next launch writes a log of its own
    rec = Journal(done.cfg.journal_path).attempts()[-1]
    assert rec.note == "adopted" and rec.job["pid"] == pid and rec.job["adopted"] and rec.job["log_path"] == str(log)
    # again: the file names the same host and container, so it is used as it is
    again = prepare(_args(lab, out))
    assert not again.written and again.pid == pid and again.verdict is not None and again.verdict.failed_stage is None


def test_an_existing_config_for_another_target_is_refused(lab: Lab, hand_job: tuple[int, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cockpit.toml"
    lab.write_config(out, target={"container": 201})
    before = out.read_text()
    with pytest.raises(ConnectError) as e:
        prepare(_args(lab, out))
    assert e.value.code == 2
    assert "pass -o FILE" in capsys.readouterr().err
    assert out.read_text() == before


class Tmux:
    def __init__(self, root: Path) -> None:
        self.socket = f"cockpit-connect-{os.getpid()}-{root.name}"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True, check=check, timeout=20)

    def screen(self) -> str:
        r = self("capture-pane", "-p", "-t", "main", check=False)
        return r.stdout if r.returncode == 0 else ""


def _steps(screen: str) -> list[int]:
    return [int(m.group(1)) for m in STEP.finditer(screen)]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_connect_shows_the_jobs_live_log_in_the_tui(lab: Lab, hand_job: tuple[int, Path], tmp_path: Path) -> None:
    _, log = hand_job
    tmux = Tmux(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "PATH": os.environ.get("PATH", ""), "TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none",
           "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8", "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
           "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
           "XDG_DATA_HOME": str(tmp_path / "xdg-data")}
    a = _args(lab, tmp_path / "cockpit.toml")
    argv = [shutil.which("cockpit") or "cockpit", "connect", a.where, "--port", str(lab.port), "--identity", a.identity,
            "--known-hosts", a.known_hosts, "--yes"]
    cmd = "env -i " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + shlex.join(argv) + "; sleep 30"
    try:
        t0 = time.monotonic()
        tmux("new-session", "-d", "-s", "main", "-x", "160", "-y", "45", "-c", str(tmp_path), cmd)
        first: dict[str, object] = {}

        def log_line_shown() -> bool:
            s = tmux.screen()
            if "Traceback" in s:
                raise AssertionError(s)
            first["screen"] = s
            return bool(_steps(s)) and "log" in s

        wait_for(log_line_shown, 60, interval=0.05, message=lambda: f"the job's log line on screen:\n{first.get('screen')}")
        took = time.monotonic() - t0
        shown = max(_steps(str(first["screen"])))
        # live: a later step of the same job appears while the TUI runs
        wait_for(lambda: any(n > shown for n in _steps(tmux.screen())), 20, interval=0.1, message="a later step on screen")
        t1 = time.monotonic()
        r = subprocess.run(lab.ssh_argv(f"{lab.pct_path} exec {CT} -- tail -n 5 {log}"), capture_output=True, text=True, timeout=30)
        plain = time.monotonic() - t1
        assert r.returncode == 0 and _steps(r.stdout), r.stderr
        print(f"\ncockpit connect: first frame with the job's log line after {took:.2f}s; "
              f"ssh -p {lab.port} root@127.0.0.1 pct exec {CT} -- tail -n 5: {plain:.2f}s")
        tmux("send-keys", "-t", "main", "q")
    finally:
        tmux("kill-server", check=False)
