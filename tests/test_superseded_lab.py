"""An attempt whose job cockpit stopped following still gets its end read (:mod:`cockpit.core.superseded`).

``cockpit launch`` starts a job beside the one before without stopping it; the engine then follows
the new job only.  When both jobs died (a reboot, the OOM killer), history read the earlier,
passed attempt as ``passed → running`` for ever.  A fresh cockpit (``cockpit status``, the TUI)
reads it once and journals how it ended; one still running stays ``running``.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, fresh_fate

pytestmark = pytest.mark.lab


async def passed_then_launched(lab: Any, lab_config: Any, engines: Any) -> tuple[Any, Any, Any]:
    """An attempt that passed (its job running), then a launch beside it: (config, engine, the attempt)."""
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", 0, "--interval", 0.05)}, verify={"settle": 0.5, "fate_interval": 0.3})
    eng = engines(cfg)
    first = await eng.attempt("the first job")
    assert first.outcome is Outcome.PASSED, first.verdict.summary()
    await await_for(lambda: (f := fate_of(cfg, first.attempt)) is not None and f.state == "running", 15, "the first job's fate: running")
    launched = await eng.run_action("launch")  # a second job beside the first, which is not stopped
    assert launched.ok, launched.summary()
    assert eng.job_attempt is not None and eng.job_attempt != first.attempt
    return cfg, eng, first


async def test_an_attempt_superseded_by_a_launch_has_its_jobs_end_read_by_the_next_cockpit(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg, eng, first = await passed_then_launched(lab, lab_config, engines)
    second = eng.job_attempt
    # a fresh cockpit while both run: the first is read, and still runs
    await fresh_fate(cfg)
    assert (f := fate_of(cfg, first.attempt)) is not None and f.state == "running", f
    await eng.close()
    assert len(lab.kill_jobs()) >= 2  # both jobs end at once, as a reboot ends them
    tui = engines(cfg)  # the TUI's start: it follows the latest job, and reads the first one's once
    tui.resume_following()
    await await_for(lambda: (f := fate_of(cfg, first.attempt)) is not None and f.final, 20, lambda: f"the first job's end: {fate_of(cfg, first.attempt)}")
    first_fate = fate_of(cfg, first.attempt)
    assert first_fate.state == "vanished" and first_fate.layer == "process", first_fate
    await await_for(lambda: (f := fate_of(cfg, second)) is not None and f.final, 20, lambda: f"the launched job's end: {fate_of(cfg, second)}")


async def test_status_reads_a_superseded_attempts_end(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg, eng, first = await passed_then_launched(lab, lab_config, engines)
    await eng.close()
    lab.kill_jobs()
    fate = await fresh_fate(cfg)  # `cockpit status`: the followed job's end, and the first one's
    assert fate is not None and fate.final, fate
    assert (f := fate_of(cfg, first.attempt)) is not None and f.state == "vanished", f
