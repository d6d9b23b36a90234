"""Two shapes that did not lie, pinned: a launcher that execs its trainer, a trainer named ``bash``.

* ``python3 exec_launcher.py GATE`` prints its setup lines and ``os.execv``s a shell loop that trains
  (the same pid and start time, a new program and name): the job passes and runs on as the new
  program; once it exits 3 after a bare ``RuntimeError: …`` line (no traceback) its fate is ``died
  (process)``, quoting that line.
* ``python3 named_shell.py raise`` renames itself ``bash`` (``prctl(PR_SET_NAME)``, as
  setproctitle does), starts a worker that lingers, trains and raises: it is not taken for a
  wrapping shell whose only child is the trainer; the death is its own (``failed (gpu)``, the
  worker named as left over).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


async def test_a_launcher_that_execs_its_trainer_is_the_trainer(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "exec-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "exec_launcher.py", gate)}, verify={"settle": 0.5, "fate_interval": 0.2})
    eng = engines(cfg)
    try:
        res = await eng.attempt("exec into the trainer")
        alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
        assert res.outcome is Outcome.PASSED and alive.detail.startswith("running: sh pid "), res.verdict.summary()
        assert res.job is not None and alive.detail.startswith(f"running: sh pid {res.job.main_pid} "), alive.detail
    finally:
        gate.touch()
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "process"), fate
    assert fate.cause == "exited with code 3, with no traceback in the log; its last line: RuntimeError: trainer gave up", fate


async def test_a_trainer_named_bash_is_not_a_wrapping_shell(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "named_shell.py", "raise")}, verify={"settle": 5.0, "fate_interval": 0.2})
    eng = engines(cfg)
    res = await eng.attempt("a trainer named bash")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None and stage.layer.value == "gpu", res.verdict.summary()
    assert stage.detail.startswith("exited with code 1: CUDA out of memory; 1 process it started lives on (pid "), stage.detail
