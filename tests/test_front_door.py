"""The front door: the installed ``cockpit`` command, called the way the README and ``--help`` show it.

Every test runs the real entry point (the ``cockpit`` script ``pip install`` made for this
Python, else ``cockpit`` on the PATH: a pyenv shim there runs bash and pyenv before it) in a
subprocess, from a temporary HOME and working directory, with no ``$COCKPIT_CONFIG`` unless the
test sets it.  The world holds five configs, each for a target whose SSH port is closed (an
action fails fast at the ``ssh`` layer and names the port):

* ``./cockpit.toml`` in the working directory: targets ``cwdone`` and ``cwdtwo`` (two ports);
* ``other/B.toml``: ``otherbox``;
* ``~/.config/cockpit/config.toml``: ``homebox``;
* ``envdir/E.toml``: ``envbox`` (named by ``$COCKPIT_CONFIG`` in the tests that say so).

Each config's journal sits beside it, and each has one ``[[actions]]`` entry named after it, so
every sub-command's output shows which config it used: the target's name or port, its journal
path, or its action.  An order of options must reach the same config as every other order.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.front_door_support import COCKPIT, needs_cockpit
from tests.lab.util import WaitTimeout, wait_for

pytestmark = needs_cockpit


def closed_port() -> int:
    """A port nothing listens on (bound, then released): a connection to it is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Box:
    name: str
    port: int
    dir: Path

    def markers(self) -> tuple[str, ...]:
        return (self.name, f"127.0.0.1:{self.port}", f"{self.dir}/", f"act-{self.name}")


@dataclass
class World:
    root: Path
    cwd: Path
    home: Path
    boxes: dict[str, Box] = field(default_factory=dict)

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COCKPIT_", "XDG_"))}
        env.update(HOME=str(self.home), TERM="xterm-256color", **extra)
        return env

    def run(self, *argv: str, timeout: float = 60, **extra: str) -> subprocess.CompletedProcess[str]:
        assert COCKPIT is not None
        return subprocess.run([COCKPIT, *argv], cwd=self.cwd, env=self.env(**extra), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def reached(self, r: subprocess.CompletedProcess[str]) -> set[str]:
        """The names of the boxes whose markers appear in the command's output."""
        out = r.stdout + r.stderr
        return {b.name for b in self.boxes.values() if any(m in out for m in b.markers())}


def _config(path: Path, targets: list[tuple[str, int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    first, port = targets[0]
    text = f'[target]\nname = "{first}"\nhost = "127.0.0.1"\nport = {port}\nruntime = "none"\n'
    text += '[job]\nworkdir = "/srv/fd-job"\ncommand = "python3 train.py"\n'
    text += f'[[actions]]\nname = "act-{first}"\ncommand = "true"\n'
    if len(targets) > 1:
        for name, p in targets:
            text += f'[[targets]]\nname = "{name}"\nport = {p}\n'
    path.write_text(text)


@pytest.fixture
def world(tmp_path: Path) -> World:
    w = World(tmp_path, tmp_path / "work", tmp_path / "home")
    for name, where in (("cwdone", "work"), ("cwdtwo", "work"), ("otherbox", "other"), ("homebox", "home/.config/cockpit"),
                        ("envbox", "envdir")):
        w.boxes[name] = Box(name, closed_port(), tmp_path / where)
    b = w.boxes
    _config(w.cwd / "cockpit.toml", [("cwdone", b["cwdone"].port), ("cwdtwo", b["cwdtwo"].port)])
    _config(b["otherbox"].dir / "B.toml", [("otherbox", b["otherbox"].port)])
    _config(b["homebox"].dir / "config.toml", [("homebox", b["homebox"].port)])
    _config(b["envbox"].dir / "E.toml", [("envbox", b["envbox"].port)])
    return w


#: every sub-command that takes the global options, with what it needs to run at once
SUBCOMMANDS: list[tuple[str, ...]] = [
    ("status",), ("status", "--quick"), ("check-config",), ("history",), ("compare", "1", "2"), ("run-action",),
    ("deploy",), ("clear-cache",), ("verify",), ("launch",), ("relaunch",), ("stop",), ("reboot", "--yes"),
    ("attempt", "-m", "front door"), ("stacks",), ("run-action", "act-{name}"), ("watch", "--once", "--timeout", "0.2"),
]


def _cmd(sub: tuple[str, ...], name: str) -> list[str]:
    return [a.replace("{name}", name) for a in sub]


@pytest.mark.parametrize("sub", SUBCOMMANDS, ids=lambda s: " ".join(s))
def test_config_before_and_after_reach_the_same_target(world: World, sub: tuple[str, ...]) -> None:
    """``cockpit --config B sub`` and ``cockpit sub --config B`` both reach B, never ./cockpit.toml;
    and plain ``cockpit sub`` from the directory reaches ./cockpit.toml."""
    other = str(world.boxes["otherbox"].dir / "B.toml")
    # the plain run (./cockpit.toml, its journal beside it) runs while the two on B run one after the other
    with ThreadPoolExecutor(1) as pool:
        plain = pool.submit(world.run, *_cmd(sub, "cwdone"))
        for argv in (["--config", other, *_cmd(sub, "otherbox")], [*_cmd(sub, "otherbox"), "--config", other]):
            r = world.run(*argv)
            assert world.reached(r) == {"otherbox"}, f"cockpit {shlex.join(argv)} → rc {r.returncode}\n{r.stdout}{r.stderr}"
            assert "usage:" not in r.stderr
        r = plain.result()
    assert "cwdone" in world.reached(r) <= {"cwdone", "cwdtwo"}, f"cockpit {shlex.join(sub)} → {r.stdout}{r.stderr}"


@pytest.mark.parametrize("sub", [("status",), ("check-config",), ("stop",), ("attempt",), ("history",)], ids=" ".join)
def test_target_before_and_after(world: World, sub: tuple[str, ...]) -> None:
    for argv in (["--target", "cwdtwo", *sub], [*sub, "--target", "cwdtwo"]):
        r = world.run(*argv)
        out = r.stdout + r.stderr
        assert "cwdtwo" in out or f"127.0.0.1:{world.boxes['cwdtwo'].port}" in out, f"cockpit {shlex.join(argv)}: {out}"
        assert f"127.0.0.1:{world.boxes['cwdone'].port}" not in out


def test_where_the_config_is_found(world: World) -> None:
    """The lookup order: --config, $COCKPIT_CONFIG, ./cockpit.toml, ~/.config/cockpit/config.toml."""
    env_cfg = str(world.boxes["envbox"].dir / "E.toml")
    assert world.reached(world.run("status", "--quick", COCKPIT_CONFIG=env_cfg)) == {"envbox"}
    assert world.reached(world.run("--config", str(world.boxes["otherbox"].dir / "B.toml"), "status", COCKPIT_CONFIG=env_cfg)) == {"otherbox"}
    assert world.reached(world.run("status", "--quick")) == {"cwdone"}  # the first of its targets
    (world.cwd / "cockpit.toml").unlink()
    assert world.reached(world.run("status", "--quick")) == {"homebox"}
    r = world.run("check-config", "--json")
    assert '"name": "homebox"' in r.stdout


def test_no_config_anywhere(world: World) -> None:
    """A sub-command says how to make one (exit 2); --demo, before or after, runs the demo."""
    (world.cwd / "cockpit.toml").unlink()
    (world.boxes["homebox"].dir / "config.toml").unlink()
    r = world.run("status")
    assert r.returncode == 2 and "no config file found" in r.stderr and "--demo" in r.stderr
    for argv in (["--demo", "check-config"], ["check-config", "--demo"]):
        r = world.run(*argv)
        assert r.returncode == 0 and r.stdout.startswith("<built-in>: OK"), r.stdout + r.stderr
    assert world.run("--demo", "status", "--quick").returncode == 0


@pytest.mark.parametrize("argv, says", [
    (["--demo", "--config", "B.toml", "status"], "--demo and --config contradict"),
    (["--demo", "status", "--config", "B.toml"], "--demo and --config contradict"),
    (["--config", "A.toml", "status", "--config", "B.toml"], "given twice with different values"),
    (["--target", "cwdone", "stop", "--target", "cwdtwo"], "given twice with different values"),
    (["--read-only", "attempt"], "acts on the target"),
    (["stop", "--read-only"], "acts on the target"),
    (["--share", "reboot", "--yes"], "acts on the target"),
    (["history", "--share", "--no-redact"], "cannot be combined with --no-redact"),
    (["--config", "B.toml", "demo", "where"], "drop --config"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_contradictions_are_usage_errors(world: World, argv: list[str], says: str) -> None:
    r = world.run(*argv)
    assert r.returncode == 2, r.stdout + r.stderr
    assert says in r.stderr
    assert "usage: cockpit" in r.stderr and "127.0.0.1:" not in r.stdout + r.stderr, "nothing ran"


def test_read_only_observation_still_works(world: World) -> None:
    for argv in (["--read-only", "status", "--quick"], ["history", "--share"], ["check-config", "--read-only"]):
        r = world.run(*argv)
        assert r.returncode in (0, 1) and "cwdone" in world.reached(r) <= {"cwdone", "cwdtwo"}, f"{argv}: {r.stdout}{r.stderr}"


def test_history_after_a_killed_cockpit_reads_interrupted(world: World) -> None:
    """``kill -9`` of cockpit mid-attempt: ``history`` reads ``interrupted`` as ``status`` does,
    never ``running → running`` (the built-in demo, a real attempt, a real SIGKILL)."""
    import json
    import signal

    assert COCKPIT is not None
    p = subprocess.Popen([COCKPIT, "--demo", "attempt", "-m", "killed mid-attempt"], cwd=world.cwd, env=world.env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        journal = Path(wait_for(lambda: next((line.split(":", 1)[1].strip() for line in world.run("--demo", "demo", "where").stdout.splitlines()
                                              if line.startswith("journal")), None), 20))
        wait_for(lambda: journal.is_file() and '"job"' in journal.read_text(), 60, "the attempt to launch its job")
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        rows = json.loads(world.run("--demo", "history", "--json").stdout)
        assert rows[-1]["outcome"] == "interrupted", rows[-1]
        assert "cockpit stopped before a verdict" in (rows[-1]["summary"] or "")
        text = world.run("history", "--demo").stdout
        assert "interrupted" in text.splitlines()[-1] and "running → running" not in text
        md = world.run("--demo", "history", "--markdown").stdout
        assert "nterrupted" in md.split("## Attempt")[-1], md[-800:]
        status = json.loads(world.run("--demo", "status", "--quick", "--json").stdout)
        assert status["latest_attempt"]["outcome"] == "interrupted"
    finally:
        if p.poll() is None:
            p.kill()
        world.run("--demo", "stop", timeout=60)  # the job the killed cockpit launched


class Tmux:
    def __init__(self, root: Path) -> None:
        self.socket = f"cockpit-fd-{os.getpid()}-{root.name}"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True, check=check, timeout=20)

    def screen(self) -> str:
        r = self("capture-pane", "-p", "-t", "main", check=False)
        return r.stdout if r.returncode == 0 else ""

    def wait(self, pred, timeout: float, what: str) -> str:  # type: ignore[no-untyped-def]
        last = {"s": ""}

        def shown() -> bool:
            last["s"] = self.screen()
            return bool(pred(last["s"]))

        try:
            wait_for(shown, timeout=timeout, interval=0.1)
        except WaitTimeout:
            raise AssertionError(f"timed out waiting for {what}; screen:\n{last['s']}") from None
        return last["s"]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.parametrize("argv, name, file", [
    ([], "cwdone", "./cockpit.toml"),
    (["--read-only"], "cwdone", "./cockpit.toml"),
    (["--share"], "cwdone", "./cockpit.toml"),
    (["--target", "cwdtwo"], "cwdtwo", "./cockpit.toml"),
    (["--config", "../other/B.toml"], "otherbox", "B.toml"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_tui_from_a_directory_with_a_config(world: World, argv: list[str], name: str, file: str) -> None:
    """Plain ``cockpit`` beside a cockpit.toml opens that target, never the demo; the status line
    names the target and the file in use."""
    tmux = Tmux(world.root)
    env = world.env(TEXTUAL_ANIMATIONS="none")
    keep = ("HOME", "PATH", "TERM", "TEXTUAL_ANIMATIONS", "PYTHONPATH", "VIRTUAL_ENV", "LANG", "LC_ALL")
    cmd = "env -i " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k in keep) + " " + shlex.join([str(COCKPIT), *argv])
    try:
        tmux("new-session", "-d", "-s", "main", "-x", "140", "-y", "35", "-c", str(world.cwd), cmd + "; sleep 30")
        screen = tmux.wait(lambda s: "processes [1]" in s and name in s.splitlines()[0] and file in s.splitlines()[0], 30,
                           f"the status line naming {name} and {file}")
        assert "demo" not in screen.splitlines()[0]
        assert "no config found" not in screen
        if "--read-only" in argv:
            assert "READ-ONLY" in screen
        if "--share" in argv:
            assert "SHARED · READ-ONLY" in screen
        tmux("send-keys", "-t", "main", "q")
        tmux.wait(lambda s: "processes [1]" not in s, 15, "cockpit to quit")
    finally:
        tmux("kill-server", check=False)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tui_without_any_config_runs_the_demo_and_says_so(world: World) -> None:
    (world.cwd / "cockpit.toml").unlink()
    (world.boxes["homebox"].dir / "config.toml").unlink()
    tmux = Tmux(world.root)
    env = world.env(TEXTUAL_ANIMATIONS="none")
    keep = ("HOME", "PATH", "TERM", "TEXTUAL_ANIMATIONS", "PYTHONPATH", "VIRTUAL_ENV", "LANG", "LC_ALL")
    cmd = "env -i " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k in keep) + " " + shlex.join([str(COCKPIT)])
    try:
        tmux("new-session", "-d", "-s", "main", "-x", "140", "-y", "35", "-c", str(world.cwd), cmd + "; sleep 30")
        screen = tmux.wait(lambda s: "processes [1]" in s and "demo" in s.splitlines()[0], 40, "the demo's first frame")
        assert "cwdone" not in screen
        tmux("send-keys", "-t", "main", "q")
        tmux.wait(lambda s: "processes [1]" not in s, 15, "cockpit to quit")
    finally:
        tmux("kill-server", check=False)


def test_serve_names_the_config_it_serves(world: World) -> None:
    """``cockpit serve`` from a directory with a config names that file and serves that target
    (the browser tabs run ``--share --config <that file>``, never the demo)."""
    pytest.importorskip("textual_serve")
    port = closed_port()
    assert COCKPIT is not None
    p = subprocess.Popen([COCKPIT, "serve", "--port", str(port)], cwd=world.cwd, env=world.env(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert p.stdout is not None
        banner = p.stdout.readline()
        assert "cwdone" in banner and str(world.cwd / "cockpit.toml") in banner, banner
    finally:
        os.killpg(p.pid, 9)
        p.wait(timeout=10)
    from argparse import Namespace

    from cockpit.cli.serve import serve_command
    from cockpit.core.config import load_config

    cfg = load_config(world.cwd / "cockpit.toml")
    cmd = serve_command(Namespace(config=None, demo=False, target=None), cfg)
    assert "--config" in cmd and str(world.cwd / "cockpit.toml") in cmd and "--demo" not in cmd
