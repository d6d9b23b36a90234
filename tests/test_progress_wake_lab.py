"""Verify is woken by the log's first change while it waits for progress (:mod:`cockpit.core.actions.progress_wake`).

A job that is quiet for a second, then steps: verify arms one ``tail -F`` while the log is quiet and
reads the job the moment the first step is written, instead of up to a tick later; the verdict is
the same.  A job that dies without a word before any progress is still read within the armed wait.
"""

from __future__ import annotations

import asyncio
import shlex
from typing import Any

import pytest

from cockpit.core.actions import progress_wake
from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import held_gate

pytestmark = pytest.mark.lab


@pytest.fixture
def wakes(monkeypatch: Any) -> list[progress_wake.ProgressWake]:
    made: list[progress_wake.ProgressWake] = []
    real = progress_wake.ProgressWake.__init__

    def init(self: progress_wake.ProgressWake, *args: Any, **kw: Any) -> None:
        real(self, *args, **kw)
        made.append(self)

    monkeypatch.setattr(progress_wake.ProgressWake, "__init__", init)
    return made


async def test_the_first_step_after_a_quiet_start_wakes_verify(lab: Any, lab_config: Any, engines: Any, wakes: Any) -> None:
    # the job's first step waits for a gate the test opens once verify is armed (its tail -F runs),
    # so the step lands inside an armed wait however slow the machine is (a step written while verify
    # reads is seen by that reading, and no wait is woken: what a start delay alone left to chance)
    with held_gate(lab, "wake-gate") as gate:
        steps = lab.jobsim_command("--steps", 0, "--interval", 0.05)
        job = f"until [ -e {shlex.quote(str(gate))} ]; do sleep 0.01; done; echo 'step 0 loss 2.0'; exec {steps}"
        cfg = lab_config(job={"command": f"sh -c {shlex.quote(job)}"}, verify={"settle": 0.5})
        attempt = asyncio.create_task(engines(cfg).attempt("a quiet start"))
        await await_for(lambda: wakes and wakes[0].waker is not None and wakes[0].waker.shell_pid is not None,
                        20, "verify armed on the quiet log")
        gate.touch()
        res = await attempt
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert len(wakes) == 1 and wakes[0].waker is not None and wakes[0].waker.usable, wakes
    assert wakes[0].woken >= 1, "verify never woke on the log: it ticked to the first step"


async def test_a_silent_death_before_progress_is_still_read(lab: Any, lab_config: Any, engines: Any, wakes: Any) -> None:
    cfg = lab_config(job={"command": "sh -c 'sleep 1; kill -9 $$'"}, verify={"settle": 0.5})
    res = await engines(cfg).attempt("dies without a word")
    stage = res.verdict.failed_stage
    # killed before a line of its own: the code may never have run (untested), at the process layer
    assert res.outcome is Outcome.UNTESTED and stage is not None, res.verdict.summary()
    assert stage.layer.value == "process" and "signal 9" in stage.detail, stage.detail
    assert wakes and wakes[0].waker is not None and wakes[0].waker.usable  # read with the waker armed, not by ticks alone
