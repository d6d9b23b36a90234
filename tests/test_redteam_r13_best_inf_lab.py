"""A best-so-far loss that starts at ``inf`` is no divergence.

``best_val_loss = float("inf")`` is how every running minimum starts: a trainer that prints it with
its steps (``step 3 | loss 0.6667 | best_val_loss inf``) says ``inf`` until its first evaluation,
then a finite value that only goes down.  Its loss is finite from the first step to the last, and it
exits 0 after ``training finished``.  cockpit failed it: ``failed (app)`` at ``settled``,
"diverged: best_val_loss turned non-finite (inf) at step 1", and its fate read ``diverged (app)``
for a run that trained to its end.  Nothing "turned" non-finite: the value was ``inf`` before any
evaluation and finite after.  The run passes and finishes.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


async def test_a_best_so_far_loss_that_starts_at_inf_is_no_divergence(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r13_best_inf.py"), "progress_pattern": r"^step \d+"},
                     verify={"settle": 0.3, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("log the best validation loss")
    assert res.outcome is Outcome.PASSED, f"the loss is finite on every line: {res.verdict.summary()}"
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "finished", f"the run trained to its end, its loss finite throughout: {fate}"
