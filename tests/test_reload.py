"""Live reload of the config file and of theme files (real files, real watchfiles)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cockpit.core.config import ConfigError, load_config
from cockpit.core.reload import ConfigReloader, FileReloader, changed_keys, needs_reconnect
from tests.lab.util import await_for as until

CONFIG = """
[target]
host = "10.1.2.6"

[job]
command = "python3 train.py"
startup_timeout = {timeout}
"""


def atomic_save(path: Path, text: str) -> None:
    """How many editors save: write a temporary file, rename it over the original."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


async def test_config_reload_valid_invalid_and_fixed(tmp_path: Path):
    path = tmp_path / "cockpit.toml"
    path.write_text(CONFIG.format(timeout=300))
    good, bad = [], []
    async with ConfigReloader(path, good.append, bad.append, debounce=0.1) as r:
        first = r.config
        assert first.job.startup_timeout == 300.0 and r.error is None

        path.write_text(CONFIG.format(timeout=120))  # in place
        await until(lambda: good, 10, "the valid edit")
        assert good[0].job.startup_timeout == 120.0 and r.config is good[0]
        assert changed_keys(first, good[0]) == ["job.startup_timeout"] and not needs_reconnect(["job.startup_timeout"])

        atomic_save(path, CONFIG.format(timeout=120).replace("startup_timeout", "startup_timout"))
        await until(lambda: bad, 10, "the invalid edit to be reported")
        err = bad[0]
        assert isinstance(err, ConfigError)
        assert err.path == str(path) and err.key == "job.startup_timout" and "startup_timeout" in err.fix
        assert r.config is good[0] and r.error is err  # the old config stays

        atomic_save(path, CONFIG.format(timeout=60).replace('"10.1.2.6"', '"10.1.2.7"'))
        await until(lambda: len(good) == 2, 10, "the fixed edit")
        assert good[1].job.startup_timeout == 60.0 and r.error is None
        keys = changed_keys(good[0], good[1])
        assert keys == ["job.startup_timeout", "target.host"] and needs_reconnect(keys)

        os.utime(path)  # no new bytes: no callback
        path.write_text(path.read_text())
        await r.check()
        assert len(good) == 2 and len(bad) == 1


async def test_half_written_file_is_not_parsed(tmp_path: Path):
    """A burst of writes (truncate, then partial content) settles before one parse."""
    path = tmp_path / "cockpit.toml"
    path.write_text(CONFIG.format(timeout=300))
    good, bad = [], []
    async with ConfigReloader(path, good.append, bad.append, debounce=0.3) as r:
        text = CONFIG.format(timeout=30)
        with open(path, "w") as fh:
            fh.write(text[: len(text) // 2])  # "[job]\ncommand = \"pyth" : invalid TOML on its own
            fh.flush()
            await until(lambda: r._dirty or r._settler is not None, 5, "the partial write to be seen")
            fh.write(text[len(text) // 2:])
        await until(lambda: good, 10, "the settled edit")
        assert good[0].job.startup_timeout == 30.0 and bad == []


async def test_theme_files_with_the_generic_reloader(tmp_path: Path):
    themes = tmp_path / "themes"
    themes.mkdir()
    dark, light = themes / "dark.toml", themes / "light.toml"
    dark.write_text('primary = "#0178d4"\n')
    light.write_text('primary = "#ffffff"\n')

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    def parse_theme(p: Path) -> dict:
        return tomllib.loads(p.read_text())

    ok, errors = [], []
    async with FileReloader([dark, light], parse_theme, lambda p, v: ok.append((p.name, v)),
                            lambda p, e: errors.append((p.name, e)), debounce=0.1) as r:
        assert r.values[dark] == {"primary": "#0178d4"}
        atomic_save(light, 'primary = "#eeeeee"\n')
        await until(lambda: ok, 10, "the light theme reload")
        assert ok == [("light.toml", {"primary": "#eeeeee"})]
        dark.write_text("primary = \n")
        await until(lambda: errors, 10, "the broken dark theme")
        assert errors[0][0] == "dark.toml" and r.values[dark] == {"primary": "#0178d4"}
        (themes / "other.toml").write_text("x = 1\n")  # not watched
        dark.unlink()
        await until(lambda: len(errors) == 2, 10, "the deleted theme to be reported")
        assert [n for n, _ in ok] == ["light.toml"]


def test_changed_keys_covers_lists_and_tables(tmp_path: Path):
    p = tmp_path / "c.toml"
    p.write_text(CONFIG.format(timeout=1))
    a = load_config(p)
    p.write_text(CONFIG.format(timeout=1) + '\n[keymap]\nattempt = "A"\n\n[[signatures]]\npattern = "boom"\n')
    b = load_config(p)
    assert changed_keys(a, b) == ["keymap", "signatures"]


async def test_missing_directory_is_an_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        await FileReloader([tmp_path / "nope" / "x.toml"], lambda p: None).start()
