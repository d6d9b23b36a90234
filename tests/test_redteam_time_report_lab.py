"""A trainer under GNU ``time`` is quoted in its own last words, not ``time``'s report.

``command = "/usr/bin/time -v python train.py"`` (the peak memory of a run, in many job scripts):
once the trainer exits, ``time`` writes its resource report to stderr, the log: "Command exited with
non-zero status 1" and two usage lines, or with ``-v`` a block of fields that ends with ``Exit
status: 1``.  A trainer that stopped itself with ``sys.exit("validation loss diverged …")`` (exit 1,
no traceback) was told "its last line: 0inputs+8outputs (0major+858minor)pagefaults 0swaps", and its
own reason was lost.  The report is skipped: the trainer's last line is its message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab

WORDS = "exited with code 1, with no traceback in the log; its last line: validation loss diverged at step "


@pytest.mark.parametrize("wrap", ["/usr/bin/time", "/usr/bin/time -v"], ids=["time", "time-v"])
async def test_a_trainers_own_last_line_is_quoted_past_times_report(wrap: str, lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / f"time-report-gate-{len(wrap)}"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": f"{wrap} {script_command(lab, 'wrapped_trainer.py', 'exitmsg', gate)}"},
                     verify={"settle": 0.5, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt(f"sys.exit under {wrap}")
    assert res.outcome is Outcome.PASSED and res.job is not None, res.verdict.summary()
    gate.touch()
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", Layer.PROCESS.value) and fate.cause.startswith(WORDS), fate
    assert fate.cause.endswith(": stopping"), fate
    assert "Command exited with non-zero status 1" in Path(res.job.log_path).read_text(), "time's report is in the log"
