"""The built-in themes have one copy, the top-level ``themes/``, and an installed cockpit finds all
four: ``cockpit/themes`` is a symlink to it in the source tree, and building the package (setuptools'
``build_py``, the step that lays out a wheel's files) turns it into real package data.  Also the
minimal built-in default used when no theme file can be read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.ui.themes import BUILTIN_ORDER, FALLBACK_DARK, LAYERS, builtin_theme_dir, default_variables, load_themes

ROOT = Path(__file__).resolve().parents[1]

#: run by the installed copy: where its themes come from, and what it loaded
PROBE = """
import json, cockpit
from cockpit.ui.themes import builtin_theme_dir, load_themes
ts = load_themes(user_dir=None)
print(json.dumps({"package": cockpit.__file__, "dir": str(builtin_theme_dir()), "names": ts.names,
                  "errors": ts.errors, "sources": ts.sources}))
"""


def test_one_copy_of_the_builtin_themes():
    link = ROOT / "cockpit" / "themes"
    assert link.is_symlink() and link.resolve() == ROOT / "themes"
    assert not (ROOT / "cockpit" / "ui" / "themes").exists()
    assert sorted(p.stem for p in (ROOT / "themes").glob("*.toml")) == sorted(BUILTIN_ORDER)
    assert Path(str(builtin_theme_dir())) == ROOT / "themes"


def test_the_installed_package_finds_all_four_themes(tmp_path):
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "themes", src / "themes", ignore=skip)
    shutil.copytree(ROOT / "cockpit", src / "cockpit", symlinks=True, ignore=skip)
    lib = tmp_path / "lib"
    build = ("import sys, setuptools\n"
             "sys.argv = ['setup.py', '-q', 'build_py', '--build-lib', sys.argv[1]]\n"
             "setuptools.setup()\n")
    r = subprocess.run([sys.executable, "-c", build, str(lib)], cwd=src, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    shipped = lib / "cockpit" / "themes"
    assert shipped.is_dir() and not shipped.is_symlink()

    env = {**os.environ, "PYTHONPATH": str(lib)}
    user = tmp_path / "no-user-themes"
    env["XDG_CONFIG_HOME"] = str(user)
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    assert Path(got["package"]).parent == lib / "cockpit"
    assert Path(got["dir"]) == shipped
    assert got["names"] == list(BUILTIN_ORDER) and got["errors"] == []
    assert all(Path(p).parent == shipped for p in got["sources"].values())


def test_no_theme_file_readable_gives_a_minimal_dark(tmp_path):
    ts = load_themes(builtin_dir=tmp_path / "none", user_dir=tmp_path / "none")
    assert ts.names == ["dark"] and ts.sources["dark"].startswith("<")
    dark = ts.themes["dark"]
    assert dark.dark and {f"layer-{x}" for x in LAYERS} <= set(dark.variables)
    assert set(FALLBACK_DARK["layers"]) == set(LAYERS)


def test_default_layer_colours_come_from_dark_toml():
    dark = load_themes(user_dir=Path("/nonexistent")).themes["dark"]
    assert default_variables() == {f"layer-{x}": dark.variables[f"layer-{x}"] for x in LAYERS}
