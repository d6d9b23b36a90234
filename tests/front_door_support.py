"""What the front-door tests share: the installed ``cockpit`` entry point, and one run of it.

Each test runs the real command in a subprocess, as a user types it, with no ``COCKPIT_*``
variable of the developer's environment leaking in (``**env`` sets the test's own).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["COCKPIT", "needs_cockpit", "run"]


def _entry_point() -> str | None:
    beside = Path(sys.executable).parent / "cockpit"
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("cockpit")


#: the installed ``cockpit`` (beside this interpreter, else on the PATH), or None
COCKPIT = _entry_point()
#: a module's ``pytestmark``: skipped where the entry point is not installed
needs_cockpit = pytest.mark.skipif(COCKPIT is None, reason="the cockpit entry point is not installed (pip install -e .)")


def run(cwd: Path, *argv: str, timeout: float = 30, **env: str) -> subprocess.CompletedProcess[str]:
    """``cockpit ARGV`` in ``cwd``, stdin empty, its output captured as text."""
    assert COCKPIT is not None
    base = {k: v for k, v in os.environ.items() if not k.startswith("COCKPIT_")}
    return subprocess.run([COCKPIT, *argv], cwd=cwd, env={**base, **env}, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
