"""cockpit/core must not know the UI exists: importing any core module pulls in no textual or rich."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import cockpit.core

CORE = Path(cockpit.core.__file__).parent


def core_modules():
    names = ["cockpit.core"]
    for m in pkgutil.walk_packages([str(CORE)], prefix="cockpit.core."):
        names.append(m.name)
    return names


def test_core_modules_found():
    mods = core_modules()
    assert "cockpit.core.layers" in mods and "cockpit.core.remote.session" in mods


def test_core_imports_no_ui_library():
    code = (
        "import importlib, sys\n"
        f"for name in {core_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(' '.join(bad))\n"
        "sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"core imported UI modules: {r.stdout} {r.stderr[-2000:]}"
