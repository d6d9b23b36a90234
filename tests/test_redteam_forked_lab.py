"""A trainer that dies while the process it forked trains on: the job is not over.

``python3 fork_parent_dies.py GATE``: five steps, then a ``fork``; the parent raises (a traceback,
exit 1) once the child has taken over, and the child prints a step every 50 ms in the same log,
in the job's process group.  The parent's status was read as the job's end because the child was
a process "it started" (:func:`cockpit.core.actions.survivors.main_exited`, meant for data-loader
workers that linger a moment and never print progress): the fate read ``died (app)``, final, "1
process it started lives on", while the child's steps went on into the log, and ``cockpit status``
said the same.  A process the main one started that writes progress lines after the main's exit
carries the job on: the fate is ``running``, naming it, until it ends too.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.fate import read_fate
from tests.lab import await_for
from tests.lab.runs import fate_of, script_command

pytestmark = pytest.mark.lab


async def test_a_forked_child_that_trains_on_after_its_parent_died_is_the_job(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "fork-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "fork_parent_dies.py", gate)}, verify={"settle": 5.0, "fate_interval": 0.3})
    eng = engines(cfg)
    try:
        res = await eng.attempt("parent dies, child trains on")
        stage = res.verdict.failed_stage
        assert stage is not None and stage.layer.value == "app" and "RuntimeError: rank 0 lost its NCCL communicator" in stage.detail, \
            res.verdict.summary()
        await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and (f.final or f.cause.startswith("its main")),
                        20, "a fate after the parent's exit")
        fate = fate_of(cfg, res.attempt)
        assert fate.state == "running" and not fate.final, fate
        assert fate.cause.startswith("its main process (python3 pid ") and " exited 1; pid " in fate.cause, fate
        assert "which it started, trains on" in fate.cause, fate
        assert res.job is not None
        status = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)  # as `cockpit status` reads it
        assert status.state == "running" and "which it started, trains on" in status.cause, status
    finally:
        gate.touch()
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.final, 20, "the final fate")
    fate = fate_of(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and "RuntimeError: rank 0 lost its NCCL communicator" in fate.cause, fate
