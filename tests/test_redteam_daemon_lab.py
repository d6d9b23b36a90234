"""A trainer that daemonized is never told it ended while it still writes the job's log.

``command = "python3 daemon_trainer.py"``: the launcher double-forks its trainer out of the job's
session (``setsid``, as a daemon does) and exits 0.  Such a process has left the job: cockpit does
not follow or stop it (docs/reliability.md).  But a reading of the job said "what it left running
ended with no error in its log after N progress lines" (fate ``finished``) while the daemon went on
training into that log, and the verdict "finished: exited with code 0".  Both now name the process
that still writes the log, and say cockpit neither follows nor stops it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.fate import read_fate
from tests.lab import await_for
from tests.lab.runs import script_command

pytestmark = pytest.mark.lab


async def test_a_reading_names_the_daemon_that_still_writes_the_log(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "daemon-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "daemon_trainer.py", gate)},
                     verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    try:
        res = await eng.attempt("daemonized trainer")
        assert res.job is not None and res.outcome.value == "passed", res.verdict.summary()
        alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
        assert "its log is still written by pid" in alive.detail and "neither follows nor stops it" in alive.detail, alive.detail
        log = Path(res.job.log_path)
        await await_for(lambda: log.read_text().count("\nstep ") >= 3, 20, "the daemon training")
        fate = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)  # as `cockpit status` reads it
        assert "ended" not in fate.cause, fate
        assert "its log is still written by pid" in fate.cause and "neither follows nor stops it" in fate.cause, fate
    finally:
        gate.touch()
