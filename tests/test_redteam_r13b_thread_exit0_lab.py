"""A training loop that ended on an uncaught error is said so, even when a thread then calls ``os._exit(0)``.

The main thread's training loop raises ``RuntimeError: CUDA error: an illegal memory access was
encountered``, uncaught: Python prints the traceback, and the process lives on because a non-daemon
"uploader" thread holds it.  That thread sees the loop gone, logs ``uploader: flushing and exiting``
and calls ``os._exit(0)`` 0.2 s later: the exit status is 0.  No step ran after the error.

The fate read "finished: exited with code 0; 1 error in the log: CUDA illegal memory access", as if
the error were one of many findings on the way to a clean end.  Exit 0 stays the job's own word
(the contract: a job that exits 0 is ``finished``, as one that catches its error at the top and
calls ``sys.exit(0)``; a process held past its loop's death for the confirmation window is ``died``),
but the fate says the loop ended on that error first, to the follower and to a later ``cockpit
status`` alike.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, fresh_fate, held_gate, script_command

pytestmark = pytest.mark.lab

LABEL = "CUDA illegal memory access"


async def test_a_loop_that_ended_on_an_uncaught_error_is_said_so_though_a_thread_exits_0(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r13b-exit0-gate") as gate:  # touched: the loop raises; 0.2 s later a thread calls os._exit(0)
        cfg = lab_config(job={"command": script_command(lab, "r13b_thread_exit0.py", gate, 0.2), "progress_pattern": r"^step \d+"},
                         verify={"settle": 0.3, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("an uploader thread that exits fast")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        gate.touch()
        fate = await final_fate(cfg, res.attempt)
    assert fate.state == "finished", fate
    assert f"its training loop ended on an error first: {LABEL}" in fate.cause, (
        f"the training loop died of an uncaught CUDA error; only a thread's os._exit(0) chose the status: {fate}")
    later = await fresh_fate(cfg)  # cockpit status: the same story
    assert later is not None and later.state == "finished" and f"ended on an error first: {LABEL}" in later.cause, later
