"""A job that wipes its output directory, with cockpit's pid file in it, has not vanished.

Many training scripts start with ``shutil.rmtree(output_dir); os.makedirs(output_dir)``
(``overwrite_output_dir``); with ``[job] log`` in that directory, cockpit's pid and exit files
beside the log go too.  cockpit then told a job that trained on ``vanished (process)``: "the job's
pid file is gone", final, and the follower stopped; one that crashed a moment later was
"vanished" too.  The supervisor's pid and start time are journalled with the job: a reading falls
back to them, so the job is read as it is (running; died with its exit status, which the
supervisor still writes into the re-made directory).
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
    ws = Path(lab.workspace(200))
    (ws / "outputs").mkdir(exist_ok=True)
    gate = ws / f"wiped-gate-{mode}"
    gate.unlink(missing_ok=True)
    Path(f"{gate}.end").unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "wiped_outputs.py", gate, mode), "log": f"{ws}/outputs/train-{{attempt}}.log"},
                     verify={"settle": 1.0, "fate_interval": 0.3})
    return cfg, gate


async def test_a_job_that_wiped_its_output_directory_runs_on(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg, gate = _config(lab, lab_config, "run")
    eng = engines(cfg)
    res = await eng.attempt("outputs wiped, training on")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    pid_file = Path(eng.job.pid_file)
    gate.touch()
    await await_for(lambda: not pid_file.exists(), 10, "the job to wipe its output directory")
    fate = await fresh_fate(cfg)
    Path(f"{gate}.end").touch()
    assert fate is not None and fate.state == "running", fate
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.cause) == ("finished", "exited with code 0"), fate


async def test_a_job_that_crashed_after_wiping_its_output_directory_died_with_its_status(lab: Any, lab_config: Any,
                                                                                        engines: Any) -> None:
    cfg, gate = _config(lab, lab_config, "crash")
    eng = engines(cfg)
    res = await eng.attempt("outputs wiped, then a crash")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    gate.touch()
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "died" and fate.cause.startswith("exited with code 1"), fate
