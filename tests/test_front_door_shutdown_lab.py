"""The front door against the lab: a command that ends while cockpit's shell on the host is still
starting (``verify`` or ``stacks`` with no job recorded: a failure right after connecting) ends
with its verdict and nothing else, never an "unhandled exception during asyncio.run() shutdown"
traceback.  The race is a matter of milliseconds (3 runs in 10 showed it before), so each command
runs a few times; its cause, a host shell's start that the session's close left pending, is pinned
deterministically by ``tests/test_channel_cancel_lab.py``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.front_door_support import COCKPIT, needs_cockpit

pytestmark = needs_cockpit

RUNS = 4


def test_a_quick_failure_after_connecting_ends_without_a_traceback(lab_config: Callable[..., Any], tmp_path: Path) -> None:
    assert COCKPIT is not None
    lab_config()  # tmp_path/cockpit.toml; its journal, beside it, is empty: no job recorded
    env = {k: v for k, v in os.environ.items() if not k.startswith("COCKPIT_")}
    for argv, says in ((["verify"], "no job recorded by cockpit to verify"), (["stacks"], "no job recorded by cockpit")):
        for i in range(RUNS):
            r = subprocess.run([COCKPIT, *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
            out = r.stdout + r.stderr
            assert r.returncode == 1 and says in out, f"cockpit {argv[0]} (run {i + 1}) → rc {r.returncode}: {out}"
            assert "Traceback" not in out and "unhandled exception" not in out, f"cockpit {argv[0]} (run {i + 1}):\n{out}"
