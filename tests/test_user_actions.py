"""User actions (``[[actions]]``): config checks, quoting, running in the target and on the host of the
lab (real sshd, emulated pct), the CLI, and the TUI (keys, confirmation, read-only, help, palette).

Waiting is always on a condition with a deadline, never a fixed sleep.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.config import ConfigError, load_config, parse_config, section_docs
from cockpit.core.config.actions import ActionConfig
from cockpit.core.layers import Layer, Status
from cockpit.core.user_actions import MAX_OUTPUT
from cockpit.core.user_template import MissingField, check_template, render
from cockpit.ui.app import create_app
from cockpit.ui.commands import CockpitCommands
from cockpit.ui.messages import ActionStarted
from cockpit.ui.screens import ConfirmScreen, HelpScreen
from cockpit.ui.screens.output import OutputScreen
from tests.test_ui_app import SIZE, Recorder, app_for, notes
from tests.test_ui_support import local_config, make_engine, wait_for

ROOT = Path(__file__).resolve().parents[1]
HOST = '[target]\nhost = "10.1.2.6"\nruntime = "pct"\ncontainer = 200\n'


def actions_toml(*actions: dict[str, Any]) -> str:
    """``[[actions]]`` entries as TOML text (strings JSON-quoted, which TOML reads the same)."""
    out = []
    for a in actions:
        out.append("\n[[actions]]")
        out.extend(f"{k} = {json.dumps(v)}" for k, v in a.items())
    return "\n".join(out) + "\n"


def lab_cfg(lab_config: Any, tmp_path: Path, *actions: dict[str, Any], **overrides: Any) -> Any:
    lab_config(**overrides)  # writes tmp_path/cockpit.toml for the lab
    p = tmp_path / "cockpit.toml"
    p.write_text(p.read_text() + actions_toml(*actions))
    return load_config(p)


ACTIONS = actions_toml({"name": "look", "key": "G", "command": "echo looked", "help": "just look"},
                       {"name": "wipe", "key": "X", "command": "touch {workdir}/wiped", "destructive": True},
                       {"name": "quiet", "command": "true"})


# -- the template -------------------------------------------------------------------------------

def test_every_value_is_quoted_and_other_braces_stay():
    hostile = "/ws/x$(touch /tmp/M)`id`;rm -rf ~ 'q'"
    cmd = render("ls -d {workdir} && echo ${HOME} && awk '{print $1}' && echo ${{x}} {{}}", {"workdir": hostile})
    assert cmd == "ls -d '/ws/x$(touch /tmp/M)`id`;rm -rf ~ '\"'\"'q'\"'\"'' && echo ${HOME} && awk '{print $1}' && echo ${x} {}"
    with pytest.raises(MissingField, match=r"\{job_pid\} has no value"):
        render("kill -0 {job_pid}", {"job_pid": None})
    assert check_template('cd "{workdir}/sub"')[0].startswith('has {workdir} inside "quotes"')
    assert check_template("echo '{log}'") is not None
    assert check_template("echo \"it's\" {workdir}") is None  # a quote inside a quoted string closes nothing


# -- config errors ------------------------------------------------------------------------------

def _act(**kw: Any) -> str:
    return actions_toml({"name": "a", "command": "true", **kw})


@pytest.mark.parametrize("text, key, words", [
    (HOST + _act(nmae="x"), "actions[0].nmae", "did you mean 'name'"),
    (HOST + _act() + _act(), "actions[1].name", "also the name of actions[0]"),
    (HOST + _act(name="stop"), "actions[0].name", "id of a built-in action"),
    (HOST + _act(name="my action"), "actions[0].name", "not a usable name"),
    (HOST + actions_toml({"name": "a"}), "actions[0].command", "is missing"),
    (HOST + _act(key="t"), "actions[0].key", "the key of the built-in 'attempt'"),
    (HOST + '[keymap]\nattempt = "G"\n' + _act(key="G"), "actions[0].key", "the key of the built-in 'attempt'"),
    (HOST + _act(key="G") + _act(name="b", key="G"), "actions[1].key", "also the key of actions[0]"),
    (HOST + _act(key="ctrl+b"), "actions[0].key", "tmux"),
    (HOST + _act(key="!"), "actions[0].key", "not a key cockpit binds"),
    (HOST + _act(key="g", destructive=True), "actions[0].key", "home-row"),
    (HOST + _act(command="df -h {wrokdir}"), "actions[0].command", "unknown field {wrokdir}"),
    (HOST + _act(command='cd "{workdir}" && ls'), "actions[0].command", "inside \"quotes\""),
    ('[target]\nhost = "x"\n' + _act(command="pct config {container}", where="host"), "actions[0].command", "no container"),
    (HOST + _act(command="ls {deploy_dest}"), "actions[0].command", "[deploy] dest is not set"),
    (HOST + _act(where="hots"), "actions[0].where", 'did you mean "host"'),
    (HOST + _act(timeout=0), "actions[0].timeout", "greater than 0"),
    (HOST + '[actions]\nname = "a"\n', "actions", "array of tables"),
])
def test_config_errors_name_file_key_and_fix(tmp_path, text, key, words):
    p = tmp_path / "cockpit.toml"
    p.write_text(text)
    with pytest.raises(ConfigError) as ei:
        load_config(p)
    e = ei.value
    assert e.key == key and words in e.message, e.message
    assert str(p) in e.message and e.fix, e.message


def test_keymap_frees_a_builtin_key_and_fields_fix_suggests_the_near_one():
    cfg = parse_config(HOST + '[keymap]\nattempt = "ctrl+g"\n' + _act(key="t"))  # t is free once attempt moved
    assert cfg.actions[0].key == "t"
    with pytest.raises(ConfigError) as ei:
        parse_config(HOST + _act(command="tail {logg}"))
    assert "did you mean {log}?" in ei.value.fix


def test_sample_config_and_readme_example_load():
    cfg = load_config(ROOT / "sample_config.toml")
    assert [(a.name, a.key, a.where, a.view) for a in cfg.actions] == [
        ("gpu-dump", "I", "target", True), ("disk", "U", "target", True), ("ct-config", "P", "host", True)]
    assert cfg.actions[0].command == "{nvidia_smi} -q" and "/dev/shm" in cfg.actions[1].command
    assert cfg.actions[2].command == "{pct} config {container}"
    text = (ROOT / "sample_config.toml").read_text()
    for key in section_docs(ActionConfig):
        assert f"\n{key} =" in text, f"actions.{key} undocumented in sample_config.toml"
    readme = (ROOT / "README.md").read_text()
    example = re.search(r"## User actions\n.*?```toml\n(.*?)```", readme, re.S)
    assert example is not None
    cfg = parse_config(HOST + example.group(1))
    assert [a.name for a in cfg.actions] == ["disk", "clear-shm"] and cfg.actions[1].destructive


def test_a_config_with_actions_pulls_in_no_ui_library():
    code = ("import sys\nfrom cockpit.core.config import parse_config\n"
            f"parse_config({HOST + _act(key='G')!r})\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
            "print(' '.join(bad)); sys.exit(1 if bad else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stdout + r.stderr


# -- running, on this machine: timeout, cap, control characters ------------------------------------

async def test_timeout_output_cap_and_control_characters(tmp_path):
    cfg = local_config(tmp_path, extra=actions_toml(
        {"name": "slow", "command": "echo started; sleep 30", "timeout": 1},
        {"name": "big", "command": "head -c 3000000 /dev/zero | tr '\\0' x; exit 4"},
        {"name": "ansi", "command": "printf '\\033[31mred\\033[0m \\007bell\\n' >&2"},
    ))
    eng = make_engine(cfg)
    try:
        slow = await eng.run_user_action("slow")
        assert slow.ran and slow.timed_out and slow.exit_code is None and not slow.ok
        assert slow.output == "started" and slow.duration_s < 10
        assert slow.answer() == "killed after 1 s (timeout)"
        big = await eng.run_user_action("big")
        assert big.exit_code == 4 and len(big.output) == MAX_OUTPUT  # the exit code survives the cap
        assert big.omitted_bytes == 3_000_000 - MAX_OUTPUT and big.to_dict()["truncated"]
        ansi = await eng.run_user_action("ansi")
        assert ansi.exit_code == 0 and "\x1b" not in ansi.output and "\x07" not in ansi.output
        assert ansi.output.startswith("red ") and "bell" in ansi.output  # stderr is merged, escapes removed
        # one table, one door: listed beside the built-ins, and run_action dispatches them too
        assert [s.id for s in eng.specs][0] == "attempt" and [s.id for s in eng.specs if s.user] == ["slow", "big", "ansi"]
        v = await eng.run_action("ansi")
        assert v.action == "ansi" and v.ok and v.stages[0].name == "run (target)"
    finally:
        await eng.close()


def test_cli_lists_every_action_of_the_target(tmp_path, capsys):
    from cockpit.cli import main

    (tmp_path / "cockpit.toml").write_text(HOST + ACTIONS)
    assert main(["run-action", "-c", str(tmp_path / "cockpit.toml"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["name"] == "attempt" and not rows[0]["user"]
    assert [(r["name"], r["key"], r["destructive"]) for r in rows if r["user"]] == [("look", "G", False), ("wipe", "X", True), ("quiet", None, False)]
    assert main(["run-action", "deploy", "-c", str(tmp_path / "cockpit.toml")]) == 2
    assert "run `cockpit deploy`" in capsys.readouterr().err
    # a name that is none of them: near matches among the built-ins too, and where the full list is
    assert main(["run-action", "relauch", "-c", str(tmp_path / "cockpit.toml")]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'relaunch'?" in err and "its [[actions]]: look, wipe, quiet" in err and "`cockpit run-action` lists" in err
    (tmp_path / "bare.toml").write_text(HOST)
    assert main(["run-action", "nosuch", "-c", str(tmp_path / "bare.toml")]) == 2
    err = capsys.readouterr().err
    assert "it has no [[actions]]" in err and "actions: none" not in err and "the built-ins too" in err


# -- running in the lab ------------------------------------------------------------------------------

@pytest.mark.lab
async def test_target_runs_in_the_container_and_host_outside_it(lab, lab_config, tmp_path, engines):
    probe = f"/tmp/cockpit-ua-{uuid.uuid4().hex[:8]}"  # the container's /tmp is its own tmpfs
    cfg = lab_cfg(lab_config, tmp_path,
                  {"name": "inside", "command": f"hostname; ls -d {{workdir}}; : > {probe}; echo nope >&2; exit 3"},
                  {"name": "outside", "where": "host", "command": f"hostname; : > {probe}; {{pct}} config {{container}}"})
    eng = engines(cfg)
    inside = await eng.run_user_action("inside")
    assert inside.ran and inside.exit_code == 3 and not inside.ok
    assert inside.output.splitlines() == ["ct200", cfg.job.workdir, "nope"]
    st = inside.verdict.stages[0]
    assert st.status is Status.OK and st.layer is Layer.CONTAINER and "exit 3" in st.detail  # its answer, not a layer
    assert not Path(probe).exists()  # written inside the container's own /tmp
    outside = await eng.run_user_action("outside")
    assert outside.ok and outside.verdict.stages[0].layer is Layer.HOST
    lines = outside.output.splitlines()
    assert lines[0] == socket.gethostname() != "ct200"
    assert "hostname: ct200" in lines  # pct config, which exists on the host only
    assert Path(probe).exists()
    os.unlink(probe)


@pytest.mark.lab
async def test_a_hostile_workdir_stays_a_name(lab, lab_config, tmp_path, engines):
    ws = lab.workspace()
    marks = [ws / f"MARK-{i}-{uuid.uuid4().hex[:6]}" for i in range(3)]
    hostile = f"{ws}/x$(touch {marks[0]})`touch {marks[1]}`;touch {marks[2]};y"
    Path(hostile).mkdir(parents=True)
    cfg = lab_cfg(lab_config, tmp_path,
                  {"name": "in", "command": "cd {workdir} && pwd"},
                  {"name": "on-host", "where": "host", "command": "ls -d {workdir} {log}"},
                  job={"workdir": hostile})
    eng = engines(cfg)
    res = await eng.run_user_action("in")
    assert res.ok and res.output == hostile
    # {log} needs a job: nothing runs, and the verdict says why (no job recorded)
    res = await eng.run_user_action("on-host")
    assert not res.ran and res.verdict.layer is Layer.PROCESS and "{log} has no value" in res.verdict.stages[0].detail
    eng.cfg.actions[1].command = "ls -d {workdir}"
    res = await eng.run_user_action("on-host")
    assert res.ok and res.output == hostile
    assert [m for m in marks if m.exists()] == []


@pytest.mark.lab
async def test_a_stopped_container_is_a_host_failure_not_the_commands(lab, lab_config, tmp_path, engines):
    cfg = lab_cfg(lab_config, tmp_path, {"name": "up", "command": "uptime"},
                  {"name": "status", "where": "host", "command": "{pct} status {container}"})
    eng = engines(cfg)
    lab.pct("stop", 200, check=True)
    res = await eng.run_user_action("up")
    assert not res.ran and res.exit_code is None
    assert res.verdict.layer is Layer.HOST and "not running" in res.verdict.stages[0].detail
    res = await eng.run_user_action("status")  # the host still answers
    assert res.ok and "status: stopped" in res.output


@pytest.mark.lab
def test_cli_runs_an_action_and_prints_its_output_and_exit_code(lab, lab_config, tmp_path):
    mark = lab.workspace() / f"cli-ran-{uuid.uuid4().hex[:6]}"
    lab_cfg(lab_config, tmp_path, {"name": "whoami", "command": "hostname; echo to-stderr >&2; exit 5"},
            {"name": "touch", "command": f"touch {mark}", "destructive": True})
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cockpit", *args, "-c", str(tmp_path / "cockpit.toml")],
                              capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)

    r = cli("run-action", "whoami", "--json")
    d = json.loads(r.stdout)
    assert r.returncode == 1 and d["exit_code"] == 5 and d["output"] == "ct200\nto-stderr" and d["ran"] and not d["ok"]
    r = cli("action", "whoami")
    assert r.returncode == 1 and r.stdout == "ct200\nto-stderr\n" and "whoami: exit 5 (target" in r.stderr
    r = cli("run-action", "whoam")
    assert r.returncode == 2 and "did you mean 'whoami'" in r.stderr
    r = cli("run-action", "touch")  # destructive, stdin not a terminal: nothing runs without --yes
    assert r.returncode == 2 and "--yes" in r.stderr and not mark.exists()
    r = cli("run-action", "touch", "--yes")
    assert r.returncode == 0 and mark.exists()


# -- the TUI -----------------------------------------------------------------------------------------

@pytest.mark.lab
async def test_tui_key_shows_the_output_and_destructive_asks_with_the_exact_command(lab, lab_config, tmp_path):
    mark = lab.workspace() / f"tui-ran-{uuid.uuid4().hex[:6]}"
    cfg = lab_cfg(lab_config, tmp_path, {"name": "where", "key": "G", "command": "hostname; ls -d {workdir}", "view": True},
                  {"name": "boom", "key": "X", "command": f"touch {mark} && echo touched {{workdir}}", "destructive": True})
    rec = Recorder()
    app = create_app(cfg, refresh=False)
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        await pilot.press("G")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputScreen) and bool(app.screen.lines), timeout=30, what="the output view")
        assert app.screen.lines == ["ct200", cfg.job.workdir]
        assert "where · exit 0" in str(app.screen.query_one("#output-title").content)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, OutputScreen), what="the view to close")
        await pilot.press("X")
        await wait_for(pilot, lambda: _shown(app, ConfirmScreen, "#confirm-where"), what="the confirmation")
        assert str(app.screen.query_one("#confirm-command").content) == f"touch {mark} && echo touched {cfg.job.workdir}"
        assert "inside container 200" in str(app.screen.query_one("#confirm-where").content)
        assert app.screen.focused.id == "confirm-no"
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the confirmation to close")
        await pilot.pause()
        assert not mark.exists() and rec.of(ActionStarted) == [] and not [w for w in app.workers if w.group == "user-action"]
        await pilot.press("X")
        await wait_for(pilot, lambda: _shown(app, ConfirmScreen, "#confirm-ok"), what="the confirmation again")
        await pilot.press("y")
        await wait_for(pilot, lambda: any(n.startswith("exit 0 — touched") for n in notes(app)), timeout=30, what="the toast")
        assert mark.exists() and [m.action for m in rec.of(ActionStarted)] == ["boom"]  # it held the target


async def test_read_only_disables_user_actions_everywhere(tmp_path):
    rec = Recorder()
    app = app_for(tmp_path, read_only=True, extra=ACTIONS)
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        await pilot.press("G", "X")
        await pilot.pause()
        assert len(app.screen_stack) == 1 and not [w for w in app.workers if w.group == "user-action"]
        assert not (tmp_path / "wiped").exists() and not any("look" in n for n in notes(app))
        assert app.check_action("user_action", ("look",)) is False and app.check_action("user_action", ("wipe",)) is False
        available = {a.id for a in CockpitCommands(app.screen)._available()}
        assert not available & {"look", "wipe", "quiet"} and "zoom" in available
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: _shown(app, HelpScreen, "HelpBody"), what="help")
        text = _help_text(app)
        assert re.search(r"G\s+look\s+just look\s+\(disabled: read-only\)", text), text


async def test_help_and_palette_list_user_actions_beside_builtins(tmp_path):
    app = app_for(tmp_path, extra=ACTIONS)
    async with app.run_test(size=SIZE) as pilot:
        provider = CockpitCommands(app.screen)
        titles = {str(h.display) for h in [h async for h in provider.discover()]}
        assert {"look", "wipe", "quiet", "Attempt", "Zoom"} <= titles
        best = max([h async for h in provider.search("wipe")], key=lambda h: h.score)
        assert str(best.match_display) == "wipe" and "(key: X)" in str(best.help)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: _shown(app, HelpScreen, "HelpBody"), what="help")
        text = _help_text(app)
        assert "Your actions" in text and re.search(r"X\s+wipe\s+in the target: touch \{workdir\}/wiped\s+\(asks first\)", text)
        assert re.search(r"—\s+quiet", text)  # no key: palette and CLI only
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="help to close")
        # a non-destructive action with view = false: a toast with the exit code and the last line
        await pilot.press("G")
        await wait_for(pilot, lambda: "exit 0 — looked" in notes(app), what="the toast")
        assert app.screen_stack[-1] is app.screen and not isinstance(app.screen, (OutputScreen, ConfirmScreen))


def _shown(app: Any, screen: type, selector: str) -> bool:
    """``screen`` is on top and composed (pushed is not enough: its widgets come a moment later)."""
    return isinstance(app.screen, screen) and bool(app.screen.query(selector))


def _help_text(app: Any) -> str:
    from rich.console import Console

    console = Console(width=160, record=True)
    console.print(app.screen.query_one("HelpBody").build())
    return console.export_text()
