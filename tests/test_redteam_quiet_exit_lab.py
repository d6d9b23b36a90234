"""A job that exits 0 is never told its process failed.

* Without a ``progress_pattern``, progress is ``healthy_after`` seconds alive without a crash: a job
  that was read healthy that long and then exited 0 was ``failed (process)``, "exited with code 0,
  with no traceback in the log".  It passes, finished.
* With a pattern, a job that exits 0 before any progress line did not fail as a *process* (its
  lifecycle ended cleanly, ``alive`` said "exited with code 0" as a failure): the training never
  showed, which is ``progress`` at ``app``, with its last line; its fate says "before any progress line".
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.jobstate import JobReader, JobState
from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


def _command(lab: Any, arg: str) -> str:
    return script_command(lab, "quiet_exit.py", arg)


async def test_a_job_read_healthy_for_healthy_after_that_exits_0_passes(lab: Any, lab_config: Any, engines: Any, monkeypatch: Any) -> None:
    gate = Path(lab.workspace(200)) / "quiet-exit-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": _command(lab, str(gate)), "progress_pattern": None, "healthy_after": 1},
                     verify={"settle": 20, "fate_interval": 0.3})
    real = JobReader.read

    async def read(reader: JobReader) -> JobState:  # the job ends once it was read alive past healthy_after
        st = await real(reader)
        if st.alive and reader.job.launched_at and time.time() >= reader.job.launched_at + 1.0:
            gate.touch()
        return st

    monkeypatch.setattr(JobReader, "read", read)
    eng = engines(cfg)
    res = await eng.attempt("healthy, then exit 0")
    alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert alive.detail.startswith("finished: exited with code 0 after 1s without a crash"), alive.detail
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer, fate.cause) == ("finished", None, "exited with code 0"), fate


async def test_exit_0_before_any_progress_line_fails_progress_at_app_not_the_process(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": _command(lab, "-")}, verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("nothing to train")
    stage = res.verdict.failed_stage
    alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
    assert res.outcome is Outcome.FAILED and stage is not None, res.verdict.summary()
    assert stage.name.endswith("progress") and stage.layer is Layer.APP, res.verdict.summary()
    assert stage.detail.startswith("the job exited with code 0 before any progress: no line matched /^step \\d+/"), stage.detail
    assert "its last line: dataset is empty, nothing to train" in stage.detail, stage.detail
    assert alive.detail.startswith("exited with code 0") and alive.status.value == "ok", alive
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer, fate.cause) == ("finished", None, "exited with code 0 before any progress line"), fate
