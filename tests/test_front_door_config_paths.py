"""The front door, where the config should be but is not a file: a directory, a broken link, an
empty ``--config``.  Each is a config error (exit 2) naming the path and what it is, never "file
not found" for something that is there, never a silent fall-back to another config or the demo.

Every test runs the installed ``cockpit`` in a subprocess, from a temporary HOME and directory.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.front_door_support import needs_cockpit, run

pytestmark = needs_cockpit

GOOD = '[target]\nname = "goodbox"\nhost = "127.0.0.1"\nport = 1\nruntime = "none"\n'


def config_error(r: subprocess.CompletedProcess[str], *says: str) -> None:
    out = r.stdout + r.stderr
    assert r.returncode == 2, f"rc {r.returncode}: {out}"
    assert "cockpit: config error:" in r.stderr and "fix:" in r.stderr, out
    assert "Traceback" not in out
    for s in says:
        assert s in r.stderr, out


@pytest.mark.parametrize("how", ["--config before", "--config after", "$COCKPIT_CONFIG"])
def test_a_directory_given_as_the_config_is_named_as_one(tmp_path: Path, how: str) -> None:
    (tmp_path / "conf.d").mkdir()
    argv = {"--config before": ["--config", "conf.d", "check-config"], "--config after": ["check-config", "--config", "conf.d"],
            "$COCKPIT_CONFIG": ["check-config"]}[how]
    env = {"COCKPIT_CONFIG": "conf.d"} if how == "$COCKPIT_CONFIG" else {}
    r = run(tmp_path, *argv, **env)
    config_error(r, "conf.d", "is a directory")
    assert "file not found" not in r.stderr


def test_a_directory_named_cockpit_toml_is_not_skipped(tmp_path: Path) -> None:
    """./cockpit.toml that is a directory stops the command (exit 2, naming it) instead of "no config
    file found" or the next file of the lookup (~/.config/cockpit/config.toml)."""
    home = tmp_path / "home"
    (home / ".config" / "cockpit").mkdir(parents=True)
    (home / ".config" / "cockpit" / "config.toml").write_text(GOOD)
    (tmp_path / "cockpit.toml").mkdir()
    r = run(tmp_path, "status", "--quick", HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    config_error(r, f"{tmp_path / 'cockpit.toml'}: is a directory")
    assert "goodbox" not in r.stdout + r.stderr
    r = run(tmp_path, "check-config", "--json", HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    assert r.returncode == 2 and '"is a directory, not a config file"' in r.stdout, r.stdout + r.stderr


def test_the_tui_does_not_run_the_demo_past_a_directory_named_cockpit_toml(tmp_path: Path) -> None:
    """Plain ``cockpit`` runs the demo only when no config exists; a directory where the config
    belongs is a config error said before any screen opens."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (tmp_path / "cockpit.toml").mkdir()
    r = run(tmp_path, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), TERM="dumb")
    config_error(r, "cockpit.toml: is a directory")
    assert "running the built-in demo" not in r.stderr


def test_a_broken_link_is_named_with_its_target(tmp_path: Path) -> None:
    (tmp_path / "cockpit.toml").symlink_to(tmp_path / "gone.toml")
    config_error(run(tmp_path, "check-config"), "broken symbolic link", "gone.toml")
    config_error(run(tmp_path, "check-config", "-c", "cockpit.toml"), "broken symbolic link", "gone.toml")


def test_an_empty_config_option_is_an_error_not_the_next_config(tmp_path: Path) -> None:
    """``--config ""`` (an unset shell variable: ``--config "$CFG"``) names no file: it must not fall
    through to $COCKPIT_CONFIG or ./cockpit.toml."""
    (tmp_path / "cockpit.toml").write_text(GOOD)
    (tmp_path / "env.toml").write_text(GOOD.replace("goodbox", "envbox"))
    for env in ({}, {"COCKPIT_CONFIG": str(tmp_path / "env.toml")}):
        r = run(tmp_path, "--config", "", "check-config", **env)
        config_error(r, "--config was given an empty path")
        assert "goodbox" not in r.stdout and "envbox" not in r.stdout
