"""Python warnings whose words say "Error" or "failed" are no failure of a healthy run.

A trainer's log carries what libraries warn through :mod:`warnings` (``UserWarning: … will raise an
Error in a future release``, a ``FutureWarning``, a ``DeprecationWarning`` "failed to find …", a
``RuntimeWarning`` naming ``ValueError``) and ends with scikit-learn's one-line ``ConvergenceWarning:
lbfgs failed to converge``, then exits 0.  It passed with no error, but the verdict and the fate
quoted that warning as the run's own word that it failed ("finished: … no error in the log, but its
last line: …ConvergenceWarning: lbfgs failed to converge"): a warning line is now never read so.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


async def test_warnings_that_say_error_and_failed_pass_a_healthy_run_that_finished_cleanly(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r11_warnings.py", 20), "progress_pattern": r"step \d+"},
                     verify={"settle": 30.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("warnings in a healthy run")
    assert res.outcome is Outcome.PASSED and res.verdict.layer is None, res.verdict.summary()
    settled = next(s for s in res.verdict.stages if s.name.endswith("settled"))
    assert settled.detail.startswith("finished cleanly: 20 progress lines, no error in the log"), settled.detail
    assert "failed" not in settled.detail, settled.detail
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "finished" and fate.cause == "exited with code 0", fate


async def test_warnings_that_say_error_and_failed_pass_a_healthy_run_that_settles(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r11_warnings.py", 40), "progress_pattern": r"step \d+"},
                     verify={"settle": 0.5, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("warnings in a healthy run, settled")
    assert res.outcome is Outcome.PASSED and res.verdict.layer is None, res.verdict.summary()
    settled = next(s for s in res.verdict.stages if s.name.endswith("settled"))
    assert "no error" in settled.detail, settled.detail
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "finished" and fate.cause == "exited with code 0", fate
