"""A stall's layer comes from the GPUs even where nothing observes them.

A job whose progress lines stop while its GPU stays busy is a device-side hang (``gpu``); every GPU
idle is a Python-side wait (``app``).  verify, a headless attempt's fate follower and ``cockpit
status`` hold no GPU observation (only the TUI's observer does), so such a hang was told
``failed (app)`` / ``stalled (app)`` with no evidence.  They now read the GPUs' utilisation once
the stall is seen.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cockpit.core.fate import read_fate
from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, script_command

pytestmark = pytest.mark.lab

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-redteam-0"}


@pytest.mark.parametrize(("util", "layer", "words"), [(99, "gpu", "GPUs busy (99%) with no progress: a device-side hang"),
                                                      (0, "app", "every GPU idle (0%)")])
async def test_a_stall_is_placed_by_the_gpus_utilisation(util: int, layer: str, words: str, lab: Any, lab_config: Any,
                                                         engines: Any) -> None:
    lab.set_gpu_state("normal", gpus=[{**H100, "utilization.gpu": util}])
    cfg = lab_config(job={"command": script_command(lab, "steps_then_hang.py")},
                     verify={"settle": 5.0, "stall_after": 1.5, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt(f"hang, GPU at {util}%")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None and stage.name.endswith("settled"), res.verdict.summary()
    assert stage.layer.value == layer and stage.detail.startswith("stalled: ") and words in stage.detail, stage.detail
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled", 20, "the stalled fate")
    fate = fate_of(cfg, res.attempt)
    assert fate.layer == layer and words in fate.cause, fate
    assert res.job is not None
    status = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)  # as `cockpit status` reads it
    assert (status.state, status.layer) == ("stalled", layer) and words in status.cause, status
