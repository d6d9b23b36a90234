"""A trainer stuck in uninterruptible sleep (``D``) is stalled at once, as its verdict said.

``python3 d_state.py``: ten steps, then a ``vfork`` whose child never execs: the parent waits in the
kernel in state ``D``, as a read from a dead NFS server or a wedged driver call does (a real ``D``
made without root kernel tricks).  Verify failed it at ``process`` ("stuck in D for 2s"), but its
fate then read ``running`` for ``stall_after`` (two minutes by default), and so did ``cockpit
status``.  A main process that stays in ``D`` over two seconds of readings is ``stalled
(process)`` at once, with its wait channel (``gpu`` when it names the NVIDIA driver).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cockpit.core.fate import read_fate
from cockpit.core.layers import Layer, Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, script_command

pytestmark = pytest.mark.lab

WORDS = "the main process is stuck in D (uninterruptible I/O"


async def test_a_trainer_stuck_in_d_is_stalled_process_not_running(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "d_state.py")}, verify={"settle": 3.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("stuck in D")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None and stage.name.endswith("alive"), res.verdict.summary()
    assert stage.layer is Layer.PROCESS and "is stuck in D (uninterruptible)" in stage.detail, stage.detail
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled", 20, "the stalled fate")
    fate = fate_of(cfg, res.attempt)
    assert fate.layer == "process" and WORDS in fate.cause, fate
    assert res.job is not None
    status = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)  # as `cockpit status` reads it
    assert (status.state, status.layer) == ("stalled", "process") and WORDS in status.cause, status
