"""``cockpit status`` after the job's end: its end is the fate, not an error finding.

A job that finished (exit 0), or that cockpit stopped, is gone from the process table; status
used to list "! job pid N is not in the process table → The job exited or never started … an OOM
kill leaves no trace" under a fate that already said `finished` or `stopped`.
"""

from __future__ import annotations

import pytest

from cockpit.core.layers import Outcome
from cockpit.core.status import collect_status
from tests.lab import await_for
from tests.lab.runs import fate_of

pytestmark = pytest.mark.lab


def kinds(report: dict) -> list[str]:
    return [f["kind"] for f in report["findings"]]


async def test_a_finished_or_stopped_job_is_no_missing_job_finding(lab, lab_config, engines):
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", 8, "--interval", 0.1)}, verify={"settle": 0.3, "fate_interval": 0.3})
    res = await engines(cfg).attempt("runs to its end")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "finished", 20, "the job finished")
    report = await collect_status(cfg)
    assert report["latest_attempt"]["fate"]["state"] == "finished", report["latest_attempt"]
    assert "job-missing" not in kinds(report), report["findings"]
    # and a job cockpit stopped
    cfg2 = lab_config(job={"command": lab.jobsim_command("--steps", 0, "--interval", 0.1)}, verify={"settle": 0.3})
    eng = engines(cfg2)
    res2 = await eng.attempt("stopped by cockpit")
    assert res2.outcome is Outcome.PASSED, res2.verdict.summary()
    v = await eng.run_action("stop")
    assert v.ok, v.summary()
    report = await collect_status(cfg2)
    assert report["latest_attempt"]["fate"]["state"] == "stopped", report["latest_attempt"]
    assert "job-missing" not in kinds(report), report["findings"]
