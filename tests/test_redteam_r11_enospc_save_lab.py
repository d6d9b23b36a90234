"""A checkpoint save that fails with ENOSPC is the container's disk, not the code.

``OSError: [Errno 28] No space left on device`` raised from ``torch.save``'s frames after progress,
while ``df`` shows room again (the half-written checkpoint is gone by the time anyone looks): the
kernel's word is the evidence, ``failed (container)`` and ``died (container)``, "disk full", never the
code's ``app``.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, held_gate, script_command

pytestmark = pytest.mark.lab


async def test_a_checkpoint_save_out_of_space_in_the_settle_window_fails_at_the_container(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r11_enospc_save.py", "-"), "progress_pattern": r"step \d+"},
                     verify={"settle": 30.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("ENOSPC while settling")
    assert res.outcome is Outcome.FAILED and res.verdict.layer == "container", res.verdict.summary()
    assert "disk full" in res.verdict.summary(), res.verdict.summary()
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "container") and "disk full" in fate.cause, fate


async def test_a_checkpoint_save_out_of_space_after_the_verdict_died_at_the_container(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r11-enospc-gate") as gate:  # touched at the end: the save
        cfg = lab_config(job={"command": script_command(lab, "r11_enospc_save.py", gate), "progress_pattern": r"step \d+"},
                         verify={"settle": 1.0, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("ENOSPC after the verdict")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "container") and "disk full" in fate.cause, fate
