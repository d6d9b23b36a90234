"""A trainer that saves a checkpoint on SIGTERM and exits 0 is stopped, not finished.

Lightning, Hugging Face's Trainer and cluster-aware loops catch SIGTERM, finish the step, write a
checkpoint for seconds and exit 0 on their own.  Its exit 0 came from cockpit's stop: the stop says
TERM did it (no KILL was needed within ``stop_timeout``), the job's handler ran to its end, and the
fate is ``stopped``, never ``finished`` (which reads as "trained to the end") nor ``died``, for
the cockpit that stopped it and for a later one (``cockpit status``) alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, fresh_fate, script_command

pytestmark = pytest.mark.lab


async def test_a_trainer_that_checkpoints_on_sigterm_and_exits_0_is_stopped(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "term_checkpoint.py")}, verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("checkpoint on SIGTERM")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log = Path(eng.job.log_path)
    v = await eng.run_action("stop")
    stages = {s.name.split(": ")[-1]: s for s in v.stages}
    assert v.ok, v.summary()
    assert stages["terminate"].detail.startswith("stopped with TERM"), v.summary()
    assert "checkpoint saved; exiting" in log.read_text(), log.read_text()[-500:]
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "stopped", fate
    later = await fresh_fate(cfg)  # as `cockpit status` reads it afterwards
    assert later is not None and later.state == "stopped", later
