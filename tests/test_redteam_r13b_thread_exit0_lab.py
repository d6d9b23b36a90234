"""A training loop that died of an uncaught error died, even when a thread then calls ``os._exit(0)``.

The main thread's training loop raises ``RuntimeError: CUDA error: an illegal memory access was
encountered``, uncaught: Python prints the traceback, and the process lives on because a non-daemon
"uploader" thread holds it.  That thread sees the loop gone, logs ``uploader: flushing and exiting``
and calls ``os._exit(0)`` 0.2 s later: the exit status is 0.  No step ran after the error.

cockpit's fate depends on who is faster.  When its follower reads the process while the uploader
still holds it, the fate is ``died (gpu)``: "the training loop raised RuntimeError … (CUDA error: an
illegal memory access was encountered)".  When the thread exits first, the fate is ``finished``:
"exited with code 0; 1 error in the log: CUDA illegal memory access", and ``cockpit history`` reads
``passed → finished``.  The run did not finish: its loop died of an uncaught error at its last step
and only a helper thread's ``os._exit(0)`` chose the status.  reliability.md: the uncaught
main-thread traceback is the loop's death; the same code gets the same verdict however its threads
race.  The fate is ``died``, naming the CUDA error, to the follower and to a later ``cockpit status``.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, fresh_fate, held_gate, script_command

pytestmark = pytest.mark.lab

ERROR = "illegal memory access"


async def test_a_loop_that_died_uncaught_died_though_a_thread_exits_0(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r13b-exit0-gate") as gate:  # touched: the loop raises; 0.2 s later a thread calls os._exit(0)
        cfg = lab_config(job={"command": script_command(lab, "r13b_thread_exit0.py", gate, 0.2), "progress_pattern": r"^step \d+"},
                         verify={"settle": 0.3, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("an uploader thread that exits fast")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        gate.touch()
        fate = await final_fate(cfg, res.attempt)
    assert fate.state == "died" and fate.layer in ("gpu", "app"), (
        f"the training loop died of an uncaught CUDA error; only a thread's os._exit(0) chose the status: {fate}")
    assert ERROR in fate.cause, fate.cause
    later = await fresh_fate(cfg)  # cockpit status: the same story
    assert later is not None and later.state == "died" and ERROR in later.cause, later
