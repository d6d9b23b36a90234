"""A trainer whose evaluation subprocess was SIGKILLed died of a signal, not of its own code.

``subprocess.run(..., check=True)`` turns the child's SIGKILL (the OOM killer's signal) into the
trainer's traceback: ``CalledProcessError: Command '[…]' died with <Signals.SIGKILL: 9>.``.  The
code did not fail: a signal from outside ended the child, as with a DataLoader worker the kernel
killed.  The fate names the signal and does not blame ``app``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


async def test_an_evaluation_child_killed_by_sigkill_is_not_the_codes_failure(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "eval-killed-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "eval_killed.py", gate), "progress_pattern": r"^step \d+"},
                     verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("an evaluation child SIGKILLed")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    gate.touch()
    fate = await final_fate(cfg, res.attempt, 30)
    assert fate.state == "died" and "SIGKILL" in fate.cause, fate
    assert fate.layer in ("process", "container"), fate
