"""The TUI's plain parts: formatting, the action registry, themes, the shell command, the
confirmation texts.  No app runs here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core.actions.job import JobRecord
from cockpit.core.keymap import ACTIONS, BY_ID, HOME_ROW
from cockpit.ui import format as fmt
from cockpit.ui.bindings import bindings
from cockpit.ui.confirmtext import reboot_command, stop_commands, target_where
from cockpit.ui.shell import shell_command
from cockpit.ui.themes import (
    BUILTIN_ORDER,
    THEME_COLOURS,
    ThemeError,
    builtin_theme_dir,
    load_theme_file,
    load_themes,
    parse_theme,
)
from tests.test_ui_support import local_config, make_engine

ROOT = Path(__file__).resolve().parents[1]


# -- formatting ------------------------------------------------------------------------------------

def test_failed_and_untested_read_differently():
    failed = fmt.outcome_text("failed", "app")
    untested = fmt.outcome_text("untested", "ssh")
    assert failed == "✘ FAILED — the code ran and failed (app)"
    assert untested == "⊘ UNTESTED — the fix never ran (ssh)"
    assert failed[0] != untested[0]  # a different glyph, not only a different colour
    assert fmt.outcome_text("failed", "app", short=True) == "✘ FAILED app"
    assert fmt.outcome_text("passed", None).startswith("✔ PASSED")


def test_every_status_has_a_glyph():
    for status in ("ok", "fail", "pending", "running", "skipped", "not reached"):
        assert fmt.status_glyph(status) != "?"
    assert {fmt.status_glyph(s) for s in ("ok", "fail", "pending", "skipped", "not reached")} == {"✔", "✘", "…", "–", "⊘"}


def test_ages_and_staleness():
    assert fmt.fmt_age(None) == "—"
    assert fmt.fmt_age(4.9) == "4s"
    assert fmt.fmt_age(125) == "2m"
    assert fmt.is_stale(None, 2.0)  # never collected is never fresh
    assert not fmt.is_stale(5.9, 2.0)
    assert fmt.is_stale(6.1, 2.0)


def test_na_values_print_as_na():
    from cockpit.core.probes.gpu import NaType

    na = NaType("[Not Supported]")
    assert fmt.fmt_na(na, ".0f", "%") == "N/A"
    assert fmt.fmt_mib(na) == "N/A"
    assert fmt.fmt_na(97.0, ">3.0f", "%") == " 97%"
    assert fmt.fmt_mib(71234) == "69.6G"


def test_spark_uses_a_fixed_scale():
    assert fmt.spark([0, 0, 0], 5) == "  ▁▁▁"  # idle stays low, never a full bar
    assert fmt.spark([100], 1) == "█"
    assert len(fmt.spark(range(100), 10)) == 10
    assert fmt.spark([50, 60], 0) == ""


def test_link_states():
    ok = fmt.link_states(transport="ssh", errors=[], container_ok=True)
    assert {k: v[0] for k, v in ok.items()} == {"ssh": "ok", "host": "ok", "container": "ok"}
    down = fmt.link_states(transport="ssh", errors=[("host", "container '200' not running!")], container_ok=False)
    assert {k: v[0] for k, v in down.items()} == {"ssh": "ok", "host": "fail", "container": "unknown"}
    local = fmt.link_states(transport="local", errors=[], container_ok=None)
    assert local["ssh"][0] == "n/a" and local["container"][0] == "unknown"


def test_code_version_and_first_error_text():
    assert fmt.code_version_text(None) == "—"
    assert fmt.code_version_text({"git_commit": "4092e570316b", "dirty": True, "dirty_hash": "5c1e9a0b"}) == "4092e57+5c1e9a"
    assert fmt.first_error_text({"summary": "FX race", "line": "RuntimeError"}) == "FX race"


# -- the action registry ---------------------------------------------------------------------------

def test_registry_ids_unique_and_documented():
    ids = [a.id for a in ACTIONS]
    assert len(ids) == len(set(ids))
    for a in ACTIONS:
        assert a.description and a.help, a.id
    by_binding = {b.id: b for b in bindings()}
    assert set(by_binding) == set(ids)


def test_no_destructive_action_on_a_bare_home_row_key_and_no_tmux_prefix():
    for a in ACTIONS:
        for key in a.keys:
            assert key not in ("ctrl+a", "ctrl+b"), a.id
            if a.destructive or a.acts:
                assert key not in HOME_ROW, a.id
    assert {a.id for a in ACTIONS if a.destructive} >= {"stop", "reboot"}


def test_every_action_has_a_method_on_the_app():
    from cockpit.ui.app import CockpitApp

    for a in ACTIONS:
        name = a.action.split("(")[0]
        assert hasattr(CockpitApp, f"action_{name}"), a.id


def test_required_actions_exist():
    assert {"attempt", "deploy", "clear-cache", "relaunch", "stop", "reboot", "shell", "zoom", "follow", "filter",
            "next-error", "theme", "help", "quit"} <= set(BY_ID)


# -- themes ----------------------------------------------------------------------------------------

def test_builtin_themes_load_and_cover_every_layer():
    ts = load_themes(user_dir=Path("/nonexistent"))
    assert ts.errors == []
    assert ts.names[:4] == list(BUILTIN_ORDER)
    for name in BUILTIN_ORDER:
        theme = ts.themes[name]
        for layer in ("config", "ssh", "host", "container", "process", "gpu", "app"):
            assert theme.variables[f"layer-{layer}"].startswith("#"), (name, layer)


def test_colorblind_theme_is_okabe_ito():
    theme = load_theme_file(ROOT / "themes" / "colorblind.toml")
    okabe_ito = {"#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"}
    assert {theme.variables[f"layer-{x}"] for x in ("config", "ssh", "host", "container", "process", "gpu", "app")} <= okabe_ito


def test_builtin_dir_is_the_checkout_when_running_from_one():
    assert Path(str(builtin_theme_dir())) == ROOT / "themes"


@pytest.mark.parametrize("text, problem", [
    ('[theme]\nprimary = "#zz0000"\n', "[theme] primary = '#zz0000' is not a colour"),
    ('[theme]\nprimary = "#112233"\nprimery = "#112233"\n', "did you mean 'primary'?"),
    ('[theme]\nprimary = "#112233"\n[layers]\nsssh = "#112233"\n', "unknown layer 'sssh'"),
    ('[theme]\nsecondary = "#112233"\n', "[theme] primary is missing"),
    ('[theme\n', "invalid TOML"),
    ('[colours]\n', "unknown table [colours]"),
])
def test_broken_theme_files_say_what_is_wrong(tmp_path, text, problem):
    p = tmp_path / "broken.toml"
    p.write_text(text)
    with pytest.raises(ThemeError) as e:
        load_theme_file(p)
    assert problem in e.value.message and "broken.toml" in e.value.message


def test_user_themes_override_and_broken_ones_are_reported(tmp_path):
    user = tmp_path / "themes"
    user.mkdir()
    (user / "mine.toml").write_text('[theme]\nprimary = "#123456"\n[layers]\napp = "#654321"\n')
    (user / "bad.toml").write_text('[theme]\nprimary = 12\n')
    ts = load_themes(user_dir=user)
    assert "mine" in ts.names and ts.themes["mine"].variables["layer-app"] == "#654321"
    dark = load_theme_file(ROOT / "themes" / "dark.toml")
    assert ts.themes["mine"].variables["layer-ssh"] == dark.variables["layer-ssh"]  # unset layers: dark's colour
    assert any("bad.toml" in e for e in ts.errors)
    assert ts.next_after("colorblind") == "bad" or ts.next_after("colorblind") == "mine"


def test_missing_builtin_dir_still_gives_dark(tmp_path):
    ts = load_themes(builtin_dir=tmp_path / "none", user_dir=tmp_path / "none")
    assert ts.names == ["dark"]


def test_theme_keys_are_textual_theme_fields():
    import inspect

    from textual.theme import Theme

    params = set(inspect.signature(Theme).parameters)
    assert set(THEME_COLOURS) <= params
    assert parse_theme("x", {"theme": {"primary": "#010203", "dark": False}}).dark is False


# -- shell command and confirmation texts ----------------------------------------------------------

def test_shell_command_for_a_pct_container_over_ssh():
    from cockpit.core.config import parse_config

    cfg = parse_config('[target]\nhost = "10.1.2.6"\nuser = "root"\nport = 2222\nruntime = "pct"\ncontainer = 200\n'
                       '[ssh]\nidentity_file = "/keys/id_ed25519"\n')
    sc = shell_command(cfg)
    assert sc.argv == ["ssh", "-t", "-a", "-o", "StrictHostKeyChecking=yes", "-p", "2222", "-i", "/keys/id_ed25519",
                       "root@10.1.2.6", "pct enter 200"]
    assert sc.display == "ssh -t -a -o StrictHostKeyChecking=yes -p 2222 -i /keys/id_ed25519 root@10.1.2.6 'pct enter 200'"


def test_shell_command_plain_host_and_local(tmp_path):
    from cockpit.core.config import parse_config

    cfg = parse_config('[target]\nhost = "gpu1"\n[job]\nworkdir = "/work space"\n')
    sc = shell_command(cfg)
    assert sc.argv[:5] == ["ssh", "-t", "-a", "-o", "StrictHostKeyChecking=yes"]
    assert sc.argv[5] == "gpu1" and "cd '/work space'" in sc.argv[6]
    local = shell_command(local_config(tmp_path), environ={"SHELL": "/bin/zsh"})
    assert local.argv == ["/bin/zsh"] and local.cwd == str(tmp_path)


def test_confirm_texts_show_the_exact_commands(tmp_path):
    eng = make_engine(local_config(tmp_path, runtime="pct"))
    assert stop_commands(eng) is None  # no job: nothing to confirm
    eng.set_job(JobRecord(attempt=3, pid=4242, pgid=4242, start_time=99, log_path=str(tmp_path / "l.log")))
    body, cmd = stop_commands(eng)
    assert "kill -s TERM -- -4242" in cmd and "kill -s KILL -- -4242" in cmd
    # exactly as stop sends them: the pid signalled only while its start time is the recorded one
    from cockpit.core.actions.jobrecord import signal_group
    job = eng.job
    assert signal_group("TERM", job, start_time=99) in cmd and signal_group("KILL", job, start_time=99) in cmd
    assert "99" in cmd and "/proc/4242/stat" in cmd
    assert "pid 4242" in body and "attempt #3" in body
    assert reboot_command(eng) == "/nonexistent/pct reboot 200"
    assert "inside container 200" in target_where(eng.cfg)
    assert reboot_command(make_engine(local_config(tmp_path / "b"))) is None


# -- import hygiene --------------------------------------------------------------------------------

def test_core_never_imports_the_ui():
    code = ("import sys, cockpit.core.engine, cockpit.core.observe, cockpit.core.status; "
            "bad = [m for m in sys.modules if m.startswith(('textual', 'rich', 'cockpit.ui'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
