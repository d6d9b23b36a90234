"""A caught exception logged with ``logger.exception`` is a handled error, not the loop's death.

A trainer that catches a data error, logs it at ERROR with its traceback (``logger.exception``:
the traceback's outermost frame is ``<module>``, as an uncaught one's) and takes seconds to recover
before its next step (reopening the dataset without the bad shard) is alive and training: its fate
stays ``running``, never ``died`` "it will not exit by itself", and its own exit 0 is ``finished``
with the error listed.  In a format with no level field (``%(asctime)s [%(name)s] %(message)s``,
common in projects) nothing says the traceback after the record was logged: the process, with no
thread but its main one, lives on and trains on, and a held loop it is not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, final_fate, script_command

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("fmt", ["level", "plain"], ids=["with its level", "without a level"])
async def test_a_logged_caught_exception_then_a_slow_recovery_is_no_loop_death(fmt: str, lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / f"logged-exception-gate-{fmt}"
    for p in (gate, Path(f"{gate}.end")):
        p.unlink(missing_ok=True)
    args = (gate, "plain") if fmt == "plain" else (gate,)
    cfg = lab_config(job={"command": script_command(lab, "logged_exception.py", *args), "progress_pattern": r"step \d+"},
                     verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("a logged, caught exception")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log = Path(eng.job.log_path)
    gate.touch()
    await await_for(lambda: " step " in log.read_text(errors="replace").partition("dataset reopened")[2], 30,
                    "the trainer to step again after its recovery")
    fate = fate_of(cfg, res.attempt)
    assert fate is not None and fate.state == "running", fate
    Path(f"{gate}.end").touch()
    fate = await final_fate(cfg, res.attempt, 30)
    assert fate.state == "finished" and fate.cause.startswith("exited with code 0"), fate
    assert "OSError" in fate.cause, fate  # the handled error is a finding of its exit 0
