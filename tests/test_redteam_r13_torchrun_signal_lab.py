"""A torchrun worker killed by a signal: the job died of that signal, not of "a traceback it logged as a warning".

``command = "torchrun … train.py"``; the worker is SIGKILLed mid-training (the OOM killer's way, a
node's watchdog, ``kill -9``).  torchrun logs ``failed (exitcode: -9) local_rank: 0 (pid: N)``,
raises its own uncaught ``ChildFailedError`` whose report says the root cause, ``traceback : Signal
9 (SIGKILL) received by PID N``, and exits 1.  cockpit's fate said ``died (process)``: "exited with
code 1, right after a traceback it logged as a warning: a torchrun worker failed".  Nothing was
logged as a warning (torchrun's traceback is uncaught, and it is no handled error), and the one
fact the report holds, the signal that killed the worker, is nowhere: it reads like a job that
chose to exit 1.  The cause names the worker's signal.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, held_gate, script_command

pytestmark = pytest.mark.lab


async def test_a_torchrun_worker_killed_by_sigkill_died_of_that_signal(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r13-torchrun-gate") as gate:  # touched: the worker is SIGKILLed
        cfg = lab_config(job={"command": script_command(lab, "r13_torchrun_killed.py", gate), "progress_pattern": r"^step \d+"},
                         verify={"settle": 0.3, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("torchrun, one worker")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        gate.touch()
        fate = await final_fate(cfg, res.attempt)
    assert fate.state == "died" and fate.layer != "app", fate
    assert "logged as a warning" not in fate.cause, f"torchrun's ChildFailedError is uncaught, not a logged warning: {fate.cause}"
    assert "SIGKILL" in fate.cause, f"torchrun's report says the worker got Signal 9 (SIGKILL): {fate.cause}"
