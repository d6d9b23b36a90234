"""A loop that stopped printing while its process spins on the CPU is no wait.

``python3 busy_swallow.py``: ten steps, then an exception caught and swallowed, and a busy loop
(100 % of a core, no line).  The stall was placed by the GPUs alone: "every GPU idle (0%): a
Python-side wait (a lock, a collective, a dataloader)", which sends the reader to look for a lock
or a collective in a process that waits for nothing.  The job's main process's CPU time is read
with its state: a stalled job whose main process uses a core says so (still ``app``).
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

WORDS = "the main thread is busy on the CPU ("
NOT = "a Python-side wait"


async def test_a_stall_that_spins_on_the_cpu_is_said_busy_not_waiting(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "busy_swallow.py")},
                     verify={"settle": 5.0, "stall_after": 1.5, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("swallowed exception, busy loop")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None and stage.name.endswith("settled"), res.verdict.summary()
    assert stage.layer is Layer.APP and WORDS in stage.detail and NOT not in stage.detail, stage.detail
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled", 20, "the stalled fate")
    fate = fate_of(cfg, res.attempt)
    assert fate.layer == "app" and WORDS in fate.cause and NOT not in fate.cause, fate
    assert res.job is not None
    status = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)  # as `cockpit status` reads it
    assert (status.state, status.layer) == ("stalled", "app") and WORDS in status.cause, status
