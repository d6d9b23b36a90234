"""A log stamped in another zone than the target's is not hours of silence.

A job whose environment sets ``TZ`` (or that logs UTC with ``time.gmtime`` on a machine east of
UTC) writes naive timestamps that the target's ``date +%z`` places hours in the past.  cockpit
dated the first lines it read by them: a job that had just started and stepped every 100 ms failed
its settle window, ``failed (app)``: "stalled: no progress for 5h00m … a Python-side wait", and a
later ``cockpit status`` said ``stalled`` of it too.  A line cannot have been written before the job
was launched: a stamp earlier than that is not read as the line's time of writing.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.engine import Engine
from cockpit.core.layers import Outcome
from tests.lab.runs import fresh_fate, script_command

pytestmark = pytest.mark.lab


async def _passed(lab: Any, lab_config: Any, engines: Any) -> Any:
    """The config of a job that logs stamped UTC-5 and steps every 100 ms, after its passed attempt."""
    cfg = lab_config(job={"command": script_command(lab, "zoned_log.py"), "env": {"TZ": "Etc/GMT+5"}, "progress_pattern": r"step \d+"},
                     verify={"settle": 1.0, "fate_interval": 0.3, "stall_after": 3})
    res = await engines(cfg).attempt("log stamped UTC-5")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    return cfg


async def test_a_job_logging_in_a_zone_west_of_the_targets_is_not_stalled(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = await _passed(lab, lab_config, engines)
    fate = await fresh_fate(cfg)
    assert fate is not None and fate.state == "running", fate


async def test_a_later_cockpit_dates_a_long_running_jobs_zoned_log_by_its_newest_line(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = await _passed(lab, lab_config, engines)
    fresh = Engine(cfg)
    try:
        assert fresh.job is not None
        fresh.job.launched_at -= 6 * 3600  # launched six hours ago: its stamps (five hours behind) are after the launch
        fate = await fresh.reconcile()
    finally:
        await fresh.close()
    assert fate is not None and fate.state == "running", fate
