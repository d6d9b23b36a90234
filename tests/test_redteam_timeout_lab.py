"""A trainer that ``timeout`` ended at its time limit is told so, not read as its own exit status.

``command = "timeout 6h python train.py"``: the job's exit status is ``timeout``'s.  When the limit
runs out it sends the trainer SIGTERM and exits 124; with ``-s KILL`` it dies of SIGKILL itself,
and with ``-k DURATION`` it follows a TERM the trainer outlived (a slow checkpoint on SIGTERM) with
SIGKILL.  cockpit said "exited with code 124, with no traceback in the log", an exit code no code
of the job chose, and for the SIGKILL "killed by SIGKILL (the OOM killer?)", which sends the reader
after the container's memory.  The cause names the time limit and the ``timeout`` that set it.  A
trainer under ``timeout`` killed before its limit (the OOM killer's SIGKILL) is read as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


async def _died(cfg: Any, res: Any) -> Any:
    """The job's death as the verdict (when it came within verify) and the journalled fate tell it:
    both the same cause; returns the fate."""
    if res.outcome is not Outcome.PASSED:
        stage = res.verdict.failed_stage
        assert stage is not None and stage.name.endswith("alive") and stage.layer is Layer.PROCESS, res.verdict.summary()
    fate = await final_fate(cfg, res.attempt, 30)
    assert (fate.state, fate.layer) == ("died", "process"), fate
    if res.outcome is not Outcome.PASSED:
        assert res.verdict.failed_stage.detail.startswith(fate.cause), (res.verdict.failed_stage.detail, fate.cause)
    return fate


@pytest.mark.parametrize(("wrap", "mode", "words"), [
    ("timeout 2", "hang", "exited with code 124: timed out: `timeout 2` stopped it with SIGTERM at its limit"),
    ("timeout -s KILL 2", "hang", "killed by signal 9 (SIGKILL): timed out: `timeout -s KILL 2` sent it at its limit"),
    ("timeout -k 1 2", "slowsave", "killed by signal 9 (SIGKILL): timed out: `timeout -k 1 2` sent SIGTERM at its limit, "
                                   "then SIGKILL 1s later as the job was still there"),
], ids=["term", "kill", "kill-after"])
async def test_a_trainer_ended_by_its_timeout_is_said_timed_out(wrap: str, mode: str, words: str, lab: Any, lab_config: Any,
                                                              engines: Any) -> None:
    gate = Path(lab.workspace(200)) / f"timeout-gate-{mode}-{wrap.count(' ')}"  # never made: it steps until the limit
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": f"{wrap} {script_command(lab, 'wrapped_trainer.py', mode, gate)}"},
                     verify={"settle": 0.5, "fate_interval": 0.3})
    res = await engines(cfg).attempt(f"under {wrap}")
    fate = await _died(cfg, res)
    assert fate.cause.startswith(words) and "OOM" not in fate.cause and "no traceback" not in fate.cause, fate


async def test_a_trainer_killed_before_its_limit_is_not_said_timed_out(lab: Any, lab_config: Any, engines: Any) -> None:
    # the OOM killer's SIGKILL at once under a limit of 30 s: timeout passes the trainer's death on (137)
    cfg = lab_config(job={"command": f"timeout -s KILL 30 {script_command(lab, 'wrapped_trainer.py', 'sigkill')}"},
                     verify={"settle": 0.5, "fate_interval": 0.3})
    res = await engines(cfg).attempt("SIGKILL under timeout")
    stage = res.verdict.failed_stage
    assert res.outcome is not Outcome.PASSED and stage is not None and stage.name.endswith("alive"), res.verdict.summary()
    assert stage.detail.startswith("killed by signal 9 (SIGKILL)") and "timed out" not in stage.detail, stage.detail
