"""A trainer that sends its output elsewhere mid-run is not told hung.

``python3 stdout_away.py GATE``: ten steps, then ``os.dup2`` of /dev/null over its stdout and stderr,
and it trains on, writing its steps to another file.  The log stops, so the job is stalled as far as
cockpit can see; but the stall's evidence read "every GPU idle (0%): a Python-side wait (a lock, a
collective, a dataloader)", sending the reader after a hang in a job that trains on.  A stall reads
where the main process's stdout and stderr go: both elsewhere than the log (/dev/null, another file)
is said so.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.fate import read_fate
from cockpit.core.layers import Layer, Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, script_command

pytestmark = pytest.mark.lab

WORDS = "the main process no longer writes its log: its stdout is /dev/null and its stderr /dev/null now"


async def test_a_trainer_whose_output_went_elsewhere_is_said_so_not_hung(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "away-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "stdout_away.py", gate)},
                     verify={"settle": 5.0, "stall_after": 1.5, "fate_interval": 0.3})
    eng = engines(cfg)
    try:
        res = await eng.attempt("stdout to /dev/null mid-run")
        stage = res.verdict.failed_stage
        assert res.outcome is Outcome.FAILED and stage is not None and stage.name.endswith("settled"), res.verdict.summary()
        assert stage.layer is Layer.APP and WORDS in stage.detail and "wait" not in stage.detail, stage.detail
        await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled", 20, "the stalled fate")
        fate = fate_of(cfg, res.attempt)
        assert fate.layer == "app" and WORDS in fate.cause, fate
        assert res.job is not None
        status = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)  # as `cockpit status` reads it
        assert (status.state, status.layer) == ("stalled", "app") and WORDS in status.cause, status
        assert Path(f"{gate}.progress").read_text().count("step ") > 10  # it trained on
    finally:
        gate.touch()
