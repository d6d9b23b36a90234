"""A hung job whose log stamps read ahead of the target's clock is stalled, not running.

A job that stamps its lines in a zone east of the target's (``TZ`` in its environment, a
container set to another zone than its host) writes naive timestamps the target's clock reads as
an hour in the future.  When its loop deadlocks while a helper thread keeps printing unstamped
lines, the newest line has no stamp to tell the zone's offset by; the last progress line's stamp
still says when it was written no better than "in the future".  A later cockpit (``cockpit
status``) must not read that as progress just now: the job has been silent past ``stall_after``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, fresh_fate, script_command

pytestmark = pytest.mark.lab


async def test_a_later_cockpit_reads_a_hung_job_stamped_an_hour_ahead_as_stalled(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "ahead-stamps-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "ahead_stamps.py", gate), "env": {"TZ": "Etc/GMT-1"}, "progress_pattern": r"step \d+"},
                     verify={"settle": 1.0, "fate_interval": 0.3, "stall_after": 3})
    eng = engines(cfg)
    res = await eng.attempt("stamps an hour ahead, then a hang")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    gate.touch()
    # the cockpit that watched it reads the silence as it comes: stalled
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled", 30, "the stalled fate")
    fate = await fresh_fate(cfg)
    assert fate is not None and (fate.state, fate.layer) == ("stalled", "app"), fate
    assert "no progress for" in fate.cause, fate
