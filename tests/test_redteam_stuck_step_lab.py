"""A trainer whose progress lines go on while its step never advances is stalled, not training.

A gradient scaler that skips every step (``grad norm inf: skipping the step``), a batch retried
forever: the loop still prints ``step 24 …`` every 50 ms, each line a match of ``progress_pattern``.
cockpit counted matching lines, so the job read ``passed``, "43 progress lines", and ``running``
for as long as it looped.  The count in the progress lines (the numbers in the pattern's match)
is followed too: once it has changed a few times, no change for the stall threshold (and for ten
times its own rhythm of changing) while lines still come is a stall at ``app``, the count named.
Gradient accumulation that logs each micro-batch with the same step (a step slower than the
threshold) is no stall: its count changes at its own rhythm.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, final_fate, script_command

pytestmark = pytest.mark.lab

WORDS = "its progress lines go on, but `step 24` has not changed in the last"


async def test_a_step_printed_again_and_again_is_a_stall(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "stuck_step.py", "stuck")},
                     verify={"settle": 0.5, "stall_after": 1.5, "fate_interval": 0.3})
    res = await engines(cfg).attempt("the same step, again and again")
    stage = res.verdict.failed_stage
    if res.outcome is not Outcome.PASSED:  # a loaded machine: verify itself saw the loop
        assert stage is not None and stage.name.endswith("settled") and stage.layer is Layer.APP, res.verdict.summary()
        assert "stalled: " in stage.detail and WORDS in stage.detail, stage.detail
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled", 20, "the stalled fate")
    fate = fate_of(cfg, res.attempt)
    assert fate.layer == "app" and WORDS in fate.cause and "step 24 loss" in fate.cause, fate


async def test_micro_batches_logged_with_their_step_are_no_stall(lab: Any, lab_config: Any, engines: Any) -> None:
    # each step (1 s) is longer than the threshold (0.7 s), and its line repeats four times
    cfg = lab_config(job={"command": script_command(lab, "stuck_step.py", "accum")},
                     verify={"settle": 5.0, "stall_after": 0.7, "fate_interval": 0.3})
    res = await engines(cfg).attempt("gradient accumulation")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "finished", fate
