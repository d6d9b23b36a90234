"""A job cockpit stopped after it trained says where it was: its fate's last progress line.

A job trains (``step N loss X``, 20 steps a second) and ``cockpit stop`` ends it.  Every other fate
of a job that made progress (died, finished, vanished, diverged, stalled) carries its last progress
line; the ``stopped`` fate carries ``last_progress: null``.  ``cockpit history --json`` then says
of the attempt ``"fate": {"state": "stopped", …, "last_progress": null}``, the field that says the
job made no progress, while ``cockpit compare`` of the same attempt shows ``last step 32`` and its
log holds 32 progress lines.  The stopped fate's ``last_progress`` is the last progress line the log
holds when it was stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import final_fate

pytestmark = pytest.mark.lab


def _steps(log: Path) -> list[str]:
    return [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("step ")] if log.exists() else []


async def test_a_stopped_job_that_trained_keeps_its_last_progress_line(lab: Any, lab_config: Any, engines: Any, tmp_path: Path) -> None:
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", 0, "--interval", 0.05), "progress_pattern": r"^step \d+"},
                     verify={"settle": 0.3, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("train, then stop it")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log = Path(eng.job.log_path)
    await await_for(lambda: len(_steps(log)) >= 20, 10, "twenty steps")
    v = await eng.run_action("stop")
    assert v.ok, v.summary()
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "stopped", fate
    steps = _steps(log)
    assert fate.last_progress, f"the job made {len(steps)} progress lines before it was stopped (the last: {steps[-1]!r}): {fate}"
    out = subprocess.run([sys.executable, "-m", "cockpit", "--config", str(tmp_path / "cockpit.toml"), "history", "--json"],
                         capture_output=True, text=True, timeout=30, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    rec = next(r for r in json.loads(out.stdout) if r["attempt"] == res.attempt)
    assert rec["fate"]["last_progress"] in steps, f"history --json: {rec['fate']}"
