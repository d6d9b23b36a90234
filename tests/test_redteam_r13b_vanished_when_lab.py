"""A job that vanished while nobody watched is not said to have lived until cockpit looked.

A job trains (20 steps a second, each line in its log) and the cockpit that launched it exits.  The
job and its supervisor shell are SIGKILLed together (an operator's ``kill -9 -- -PGID``, a cgroup's
OOM kill of the whole group): no exit status is written.  A later ``cockpit status`` reads
``vanished (process) after Ns`` where N is the time from the launch to *that reading*: the longer
nobody looked, the longer the job "lived" (a status the next morning says "vanished after 14h" of a
job whose log stopped an hour in).  Its log, written every 50 ms until the kill, says when it was
last alive.  The fate's ``after_s`` is not later than the job's last sign of life by more than a
reading's slack; it is not the age of the launch when someone happened to look.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.engine import Engine
from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fresh_fate

pytestmark = pytest.mark.lab


async def test_a_job_that_vanished_unwatched_is_not_aged_to_the_reading(lab: Any, lab_config: Any) -> None:
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", 0, "--interval", 0.05), "progress_pattern": r"^step \d+"},
                     verify={"settle": 0.3, "fate_interval": 0.3})
    first = Engine(cfg)  # launches it, verifies it, and exits
    try:
        res = await first.attempt("train, nobody watching", follow=False)
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        job = first.job
    finally:
        await first.close()
    assert job is not None and job.launched_at
    lab.kill_jobs()  # the job and its supervisor, SIGKILLed: no exit status
    killed = time.time() - job.launched_at
    log = Path(job.log_path)
    last_write = log.stat().st_mtime - job.launched_at
    await await_for(lambda: time.time() - job.launched_at > killed + 3, 10, "three seconds with nobody looking")
    fate = await fresh_fate(cfg)  # cockpit status
    assert fate is not None and fate.state == "vanished", fate
    assert fate.after_s is not None and fate.after_s <= killed + 1.0, (
        f"the job's log stopped {last_write:.1f}s after the launch and it was killed {killed:.1f}s after it; "
        f"the fate says it vanished after {fate.after_s:.1f}s, the moment cockpit status looked: {fate}")
