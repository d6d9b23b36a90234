"""A trainer that forks and exits while the process it forked trains on: the job is not over.

``python3 fork_parent_dies.py GATE [exit0]``: five steps, then a ``fork``; once the child has taken
over, the parent raises (a traceback, exit 1) or exits 0 without a word, and the child prints a step
every 50 ms in the same log, in the job's process group.  The parent's status was read as the job's
end because the child was a process "it started" (:func:`cockpit.core.actions.survivors.main_exited`,
meant for data-loader workers that linger a moment and never print progress): exit 1 read ``died
(app)``, final, "1 process it started lives on", exit 0 ``passed`` with "finished: exited with code
0" and the fate ``finished``, while the child's steps went on into the log; ``cockpit status`` said
the same.  A process the main one started that writes progress lines after the main's exit carries
the job on: it is ``running``, naming it, until it ends too.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.fate import read_fate
from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, final_fate, script_command

pytestmark = pytest.mark.lab

ERROR = "RuntimeError: rank 0 lost its NCCL communicator"


@pytest.mark.parametrize("code", [1, 0])
async def test_a_forked_child_that_trains_on_after_its_parent_exited_is_the_job(code: int, lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / f"fork-gate-{code}"
    gate.unlink(missing_ok=True)
    args = [gate] if code else [gate, "exit0"]
    cfg = lab_config(job={"command": script_command(lab, "fork_parent_dies.py", *args)}, verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    trains_on = f" exited {code}; pid "
    try:
        res = await eng.attempt(f"parent exits {code}, child trains on")
        alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
        assert alive.detail.startswith("running: its main process (python3 pid ") and trains_on in alive.detail, alive.detail
        assert "which it started, trains on" in alive.detail, alive.detail
        stage = res.verdict.failed_stage
        if code:  # the parent's traceback is an error in the log
            assert stage is not None and stage.layer.value == "app" and ERROR in stage.detail, res.verdict.summary()
        else:
            assert res.outcome is Outcome.PASSED, res.verdict.summary()
        await await_for(lambda: fate_of(cfg, res.attempt) is not None, 20, "the first fate")
        fate = fate_of(cfg, res.attempt)
        assert fate.state == "running" and trains_on in fate.cause and "which it started, trains on" in fate.cause, fate
        assert res.job is not None
        status = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)  # as `cockpit status` reads it
        assert status.state == "running" and "which it started, trains on" in status.cause, status
    finally:
        gate.touch()
    fate = await final_fate(cfg, res.attempt)
    if code:
        assert (fate.state, fate.layer) == ("died", "app") and ERROR in fate.cause, fate
    else:
        assert fate.state == "finished" and "its exit status was not observed (its parent exited first)" in fate.cause, fate
