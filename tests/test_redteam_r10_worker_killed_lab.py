"""A data-loader worker SIGKILLed from outside (the OOM killer's way): the main process's word decides.

A trainer runs a real worker process (``multiprocessing``, forked); the test SIGKILLs it.  A main
process that does without it and trains on is running, then finished: a killed child of the job
is no death of the job.  One that raises PyTorch 1.x's single ``RuntimeError: DataLoader worker (pid
N) is killed by signal: Killed.`` (no ``exited unexpectedly`` chain after it) died of the
container's limits, ``died (container)``, not of its code.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, final_fate, held_gate, script_command

pytestmark = pytest.mark.lab


async def _kill_worker(lab: Any, gate: Path) -> None:
    await await_for(lambda: Path(f"{gate}.pid").exists(), 10, "the worker's pid")
    pid = int(Path(f"{gate}.pid").read_text())  # as the container sees it
    lab.exec_in(200, f"kill -KILL {pid}", check=True)


async def test_a_worker_killed_under_a_trainer_that_trains_on_is_no_death(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r10-worker-on") as gate:  # touched at the end: the trainer ends well
        cfg = lab_config(job={"command": script_command(lab, "r10_worker_killed.py", gate, "on")},
                         verify={"settle": 1.0, "fate_interval": 0.3, "stall_after": 60})
        eng = engines(cfg)
        res = await eng.attempt("worker killed, trainer trains on")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        await _kill_worker(lab, gate)
        killed = time.monotonic()
        follower = eng.follower
        assert follower is not None
        await await_for(lambda: follower.checked_at > killed + 1.0 or (f := fate_of(cfg, res.attempt)) is not None and f.final,
                        10, "a reading after the kill")
        fate = fate_of(cfg, res.attempt)
        assert fate is not None and fate.state == "running", fate
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "finished" and fate.cause.startswith("exited with code 0"), fate


async def test_a_trainer_that_raises_for_its_killed_worker_died_of_the_containers_limits(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r10-worker-raise") as gate:
        cfg = lab_config(job={"command": script_command(lab, "r10_worker_killed.py", gate, "raise")},
                         verify={"settle": 1.0, "fate_interval": 0.3, "stall_after": 60})
        eng = engines(cfg)
        res = await eng.attempt("worker killed, trainer raises")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        await _kill_worker(lab, gate)
        await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.final, 20, "the final fate")
    fate = fate_of(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "container"), fate
    assert "a DataLoader worker was killed by SIGKILL" in fate.cause, fate
