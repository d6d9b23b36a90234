"""A DataLoader worker killed by the kernel is the container's limits, not the training code.

PyTorch's main process turns a worker's death into a traceback: ``RuntimeError: DataLoader worker
(pid(s) N) exited unexpectedly``, caused by ``… is killed by signal: Killed.`` (the OOM killer's
SIGKILL: the container's memory limit) or ``… Bus error`` after ``Unexpected bus error encountered
in worker`` (a ``/dev/shm`` too small for the batches workers hand over: Docker's 64 MiB default).
cockpit said ``failed (app)``, "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly",
"the code ran and failed" in the training code.  It is ``container``, with the limit to raise.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


@pytest.mark.parametrize(("kind", "words"), [
    ("killed", "a DataLoader worker was killed by SIGKILL (the OOM killer?)"),
    ("bus", "a DataLoader worker died of SIGBUS: /dev/shm too small?"),
])
async def test_a_killed_dataloader_worker_is_the_container_layer(kind: str, words: str, lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "loader_killed.py", kind)}, verify={"settle": 3.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt(f"loader worker {kind}")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None, res.verdict.summary()
    assert stage.layer is Layer.CONTAINER and stage.detail.startswith(f"exited with code 1: {words}"), stage.detail
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "container") and fate.cause.startswith(f"exited with code 1: {words}"), fate
