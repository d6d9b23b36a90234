"""Metrics through the real follower, against the lab (issue 15): the training-job simulator's
``step N loss X lr Y`` lines, read over SSH inside the emulated container by verify and then by
the fate follower, become the attempt's series with the simulator's exact values; a failed
attempt keeps the steps it made before it died, and the two compare at matching steps."""

from __future__ import annotations

import pytest

from cockpit.core.journal import Journal
from cockpit.core.layers import Outcome
from cockpit.core.metrics import MetricsStore, load_attempt, metrics_path
from cockpit.core.metrics.compare import compare
from tests.lab import await_for
from tests.lab.jobsim import loss_at

pytestmark = pytest.mark.lab


def job(lab, *args):
    return lab.jobsim_command(*[str(a) for a in args])


async def test_the_job_simulator_yields_its_series_through_the_follower(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 30, "--interval", 0.03, "--seed", 3, "--crash", "exc", "--crash-at", 25)})
    eng = engines(cfg)
    failed = await eng.attempt("baseline")
    assert failed.outcome is Outcome.FAILED, failed.verdict.summary()
    m = eng.metrics.get(failed.attempt)
    assert m is not None and m.series["loss"].xs == [float(s) for s in range(1, 25)]  # every step before the crash
    assert m.series["loss"].ys == [round(loss_at(s, 3), 4) for s in range(1, 25)]

    cfg2 = lab_config(job={"command": job(lab, "--steps", 120, "--interval", 0.03, "--seed", 3)})
    eng2 = engines(cfg2)
    passed = await eng2.attempt("the fix")
    assert passed.outcome is Outcome.PASSED, passed.verdict.summary()
    # after the verdict the fate follower reads on to the end of the job
    await await_for(lambda: (x := eng2.metrics.get(passed.attempt)) is not None and x.series["loss"].count == 120, 30,
                    "all 120 steps through the fate follower")
    s = eng2.metrics.get(passed.attempt).series["loss"]
    assert s.xs == [float(i) for i in range(1, 121)] and s.ys == [round(loss_at(i, 3), 4) for i in range(1, 121)]
    assert eng2.metrics.get(passed.attempt).series["lr"].ys == [3e-4] * 120

    # on disk beside the journal, read back by a store that never saw the job
    back, _ = load_attempt(metrics_path(cfg2.journal_path.parent, passed.attempt), passed.attempt)
    assert back.series["loss"].xs == s.xs and back.mean_rate() is not None
    d = compare(Journal(cfg2.journal_path), MetricsStore(cfg2.journal_path.parent, cfg2), failed.attempt, passed.attempt)
    rows = d["matching"]["loss"]
    assert [r["step"] for r in rows] == [1, 7, 13, 18, 24] and all(r["delta"] == 0 and r["exact"] for r in rows)  # same seed
    assert d["a"]["story"].startswith("failed (app)") and d["b"]["story"].startswith("passed")
