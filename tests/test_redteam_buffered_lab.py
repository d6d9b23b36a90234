"""A Python trainer that prints without ``-u`` is read as it trains, not as a silent or stalled job.

Into a file Python's stdout is block-buffered: the log stays empty for the first 8 KiB of output
(about 20 s here, minutes for a job that prints a line per one-second step), then grows in bursts.
cockpit said ``untested (process)``, "the log stayed empty for startup_timeout", of a job that
trained all along, and between two bursts the fate turned ``stalled (app)``, "a Python-side wait",
of a job stepping steadily.  The job runs with ``PYTHONUNBUFFERED=1`` unless ``[job.env]`` sets
it: its lines reach the log as they are printed.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import script_command

pytestmark = pytest.mark.lab


async def test_a_trainer_printing_without_flush_passes_on_its_steps(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "buffered_print.py"), "startup_timeout": 6}, verify={"settle": 1.0})
    eng = engines(cfg)
    res = await eng.attempt("print without flush")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert eng.job is not None and "PYTHONUNBUFFERED='1'" in open(eng.job.log_path).read(), "the job's environment"


async def test_the_jobs_own_setting_wins(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "buffered_print.py"), "env": {"PYTHONUNBUFFERED": ""}, "startup_timeout": 2},
                     verify={"settle": 0.5})
    eng = engines(cfg)
    res = await eng.attempt("buffered on purpose")
    stage = res.verdict.failed_stage
    assert res.outcome is not Outcome.PASSED and stage is not None and stage.name.endswith("log growing"), res.verdict.summary()
