"""A job whose log was deleted under it is told so, never "with no traceback in the log".

``rm train.log`` while the job runs (by hand, a cleanup script): the job writes on into the deleted
file, which cockpit reads through the job's open descriptor while its supervisor lives.  When the
job then crashed, its traceback went with the file: cockpit said ``died (process)`` "exited with
code 1, with no traceback in the log", which reads as "the code did not raise".  It names the
traceback when a reading still reaches the deleted file, and otherwise says the log was deleted and
that its last lines could not be read.  While it runs, a later cockpit said its log
"was moved to train.log (rotated?)", the very path that no longer exists: it says deleted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import final_fate, fresh_fate, script_command

pytestmark = pytest.mark.lab


def _config(lab: Any, lab_config: Any, mode: str) -> tuple[Any, Path]:
    gate = Path(lab.workspace(200)) / f"deleted-log-gate-{mode}"
    gate.unlink(missing_ok=True)
    Path(f"{gate}.end").unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "deleted_log.py", gate, mode)}, verify={"settle": 1.0, "fate_interval": 0.3})
    return cfg, gate


async def test_a_job_that_crashed_after_its_log_was_deleted_is_not_told_it_left_no_traceback(lab: Any, lab_config: Any,
                                                                                            engines: Any) -> None:
    cfg, gate = _config(lab, lab_config, "crash")
    eng = engines(cfg)
    res = await eng.attempt("log deleted, then a crash")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    gate.touch()
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "died" and fate.cause.startswith("exited with code 1"), fate
    assert "no traceback" not in fate.cause, fate
    # the job's supervisor holds the deleted file open a moment after the job's death: a reading that
    # falls in that moment reads the traceback itself (the whole truth); one after it says why not
    read = "RuntimeError: the optimizer state is corrupt" in fate.cause
    assert read or "its log was deleted while it ran: its last lines could not be read" in fate.cause, fate


async def test_a_later_cockpit_says_a_running_jobs_log_was_deleted_not_moved(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg, gate = _config(lab, lab_config, "run")
    eng = engines(cfg)
    res = await eng.attempt("log deleted, training on")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log = Path(eng.job.log_path)
    gate.touch()
    await await_for(lambda: not log.exists(), 10, "the job to delete its log")
    fate = await fresh_fate(cfg)
    Path(f"{gate}.end").touch()
    assert fate is not None and fate.state == "running", fate
    assert "moved" not in fate.cause and "rotated" not in fate.cause, fate
    assert "its log was deleted (it writes on into the deleted file, read through its open descriptor)" in fate.cause, fate
