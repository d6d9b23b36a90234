"""A trainer that restarts itself in place (``os.execv``) after a caught crash is not dead.

Fault-tolerant training scripts catch the error at the top level, print its traceback
(``traceback.print_exc()``: an unwound-looking traceback, ``<module>`` outermost, no log record
before it) and re-execute their own command line to resume from the last checkpoint: the same
pid, a fresh interpreter that spends seconds loading before its next step.  The job never ended:
its fate must never read ``died`` (final) while it reloads and trains on, and its end is its own
exit 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import final_fate, fresh_fate, script_command

pytestmark = pytest.mark.lab


async def _crashed_and_resumed(lab: Any, lab_config: Any, engines: Any, name: str) -> tuple[Any, Any, Path]:
    """An attempt of the re-exec job that passed, its crash set off, and its resumed run stepping."""
    gate = Path(lab.workspace(200)) / name
    for p in (gate, Path(f"{gate}.end"), Path(f"{gate}.ckpt")):
        p.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "reexec_resume.py", gate)}, verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt(f"re-exec after a crash ({name})")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log = Path(eng.job.log_path)
    gate.touch()
    await await_for(lambda: "step " in log.read_text(errors="replace").partition("checkpoint loaded")[2], 30,
                    "the re-executed trainer to step again after loading its checkpoint")
    return cfg, res, gate


async def test_a_trainer_that_reexecs_itself_after_a_crash_is_not_told_dead(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg, res, gate = await _crashed_and_resumed(lab, lab_config, engines, "reexec-gate")
    Path(f"{gate}.end").touch()
    fate = await final_fate(cfg, res.attempt, 30)
    assert fate.state == "finished", fate
    assert "illegal memory access" in fate.cause, fate  # the caught crash is a finding of its exit 0


async def test_a_later_cockpit_reads_the_reexecuted_trainer_running(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg, res, gate = await _crashed_and_resumed(lab, lab_config, engines, "reexec-gate-later")
    fate = await fresh_fate(cfg)  # as `cockpit status` reads it while it trains on
    Path(f"{gate}.end").touch()
    assert fate is not None and fate.state == "running", fate
