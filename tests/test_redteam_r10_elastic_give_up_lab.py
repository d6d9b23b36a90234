"""An agent whose worker keeps crashing until its restarts run out: running while it restarts, then
the worker's own error at ``app``.

torchrun with ``--max-restarts 2``: each worker dies of the same ``ValueError``, the agent restarts
the group twice, then raises its ``ChildFailedError`` report (an exception line with no message, a
block of ``====`` lines) and exits 1.  While the agent restarts, the job is running, never a final
``died``; once it gives up, the fate is ``died (app)`` naming the worker's ``ValueError`` (the root
cause the report stands for), not the agent's ``ChildFailedError``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.loopdeath import LOOP_CONFIRM_S
from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, final_fate, script_command

pytestmark = pytest.mark.lab


async def test_an_agent_that_runs_out_of_restarts_fails_for_its_workers_error(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "r10-elastic-gate"
    for p in (gate, Path(f"{gate}.1"), Path(f"{gate}.2")):
        p.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "r10_elastic_give_up.py", gate)},
                     verify={"settle": 1.0, "fate_interval": 0.3, "stall_after": 60})
    eng = engines(cfg)
    res = await eng.attempt("elastic agent out of restarts")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log = Path(eng.job.log_path)
    try:
        gate.touch()  # worker 0 crashes; the agent waits before its restart
        await await_for(lambda: "Worker group FAILED" in log.read_text(), 10, "the first worker's crash")
        seen = time.monotonic()
        follower = eng.follower
        assert follower is not None
        await await_for(lambda: follower.checked_at > seen + LOOP_CONFIRM_S + 0.5 or (f := fate_of(cfg, res.attempt)) is not None and f.final,
                        15, "a reading past the loop-death confirmation window")
        fate = fate_of(cfg, res.attempt)
        assert fate is not None and fate.state == "running", fate
    finally:
        Path(f"{gate}.1").touch()  # the restarts: each worker crashes after 2 steps, then the agent gives up
        Path(f"{gate}.2").touch()
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app"), fate
    assert fate.cause.startswith("exited with code 1: ValueError: Expected input batch_size (32)"), fate
    assert "ChildFailedError" not in fate.cause, fate
