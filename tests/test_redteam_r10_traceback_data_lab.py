"""A healthy trainer whose log quotes a traceback's words as data passes and finishes.

A code model's trainer prints a sample of its dataset at step 5: the sample's ``repr`` on one line
(``sample 17: 'Traceback (most recent call last):\\n  File …ZeroDivisionError: division by zero'``)
or a line quoting a traceback's first line after other words.  Neither is a traceback the job
raised: the attempt passes and the fate is ``finished``, with no error in it.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("kind", ["repr", "inline"])
async def test_a_traceback_quoted_as_data_is_no_error(lab: Any, lab_config: Any, engines: Any, kind: str) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r10_traceback_data.py", kind), "progress_pattern": r"step \d+"},
                     verify={"settle": 30.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt(f"a traceback quoted as data ({kind})")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    settled = next(s for s in res.verdict.stages if s.name.endswith("settled"))
    assert "no error in the log" in settled.detail, settled.detail
    fate = await final_fate(cfg, res.attempt)
    assert "finished cleanly" in settled.detail, settled.detail
    assert fate.state == "finished" and fate.cause == "exited with code 0", fate
