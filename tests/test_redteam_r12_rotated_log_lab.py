"""A later cockpit that meets a job whose log was emptied after its end says the log lost its lines.

The launching cockpit's attempt passed (it saw ``step N`` lines) and exited; the job ran on and
ended; then its log was rotated (copied away, truncated to nothing).  ``cockpit verify`` run later
read the empty log and said, of a job that exited 0 after 40 steps, "process failed at alive: exited
with code 0, with no traceback in the log (no progress line before it)" and journalled "finished:
exited with code 0 before any progress line"; of one that crashed, "no traceback in the log; no
progress line before it".  The journal holds what the launching verify saw (the job's main process,
progressed): the judges now say an earlier reading saw progress the log no longer holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.actions.causebase import LOST_LOG
from cockpit.core.engine import Engine
from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, script_command

pytestmark = pytest.mark.lab


@pytest.mark.parametrize("end", ["ok", "crash"])
async def test_a_later_verify_of_a_job_whose_log_was_rotated_after_its_end(lab: Any, lab_config: Any, engines: Any, end: str) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r12_steps.py", 40, end), "progress_pattern": r"step \d+"},
                     verify={"settle": 0.3, "fate_interval": 0.3})
    first = Engine(cfg)  # the launching cockpit: its attempt passes, then it exits
    try:
        res = await first.attempt("rotated after the end")
        job = first.job
    finally:
        await first.close()
    assert res.outcome is Outcome.PASSED and job is not None, res.verdict.summary()
    await await_for(lambda: lab.exec_in(200, f"cat {job.exit_file}").stdout.strip() != "", 10, "the job's end")
    lab.exec_in(200, f"cp {job.log_path} {job.log_path}.1 && : > {job.log_path}", check=True)  # logrotate's copytruncate
    later = engines(cfg)
    v = await later.run_action("verify")
    alive = next(s for s in v.stages if s.name == "alive")
    fate = fate_of(cfg, later.job_attempt)
    assert "no progress line before it" not in alive.detail and LOST_LOG in alive.detail, v.summary()
    if end == "ok":
        assert v.failed_stage is None, v.summary()
        assert fate.state == "finished" and "before any progress" not in fate.cause and LOST_LOG in fate.cause, fate
    else:
        assert "may have gone with the lines it lost" in alive.detail, alive.detail
        assert fate.state == "died" and "may have gone with the lines it lost" in fate.cause, fate
