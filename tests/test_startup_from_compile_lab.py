"""``[verify] startup_timeout_from = "first_compile"`` through whole attempts against the lab (real
sshd, the pct emulator, the trace filter in the container; docs/compile.md).

The job (tests/lab/jobs/held_compile.py) needs no torch: it writes a recorded trace
(tests/fixtures/torch_trace/recompile_storm) into the ``$TORCH_TRACE`` cockpit set up to its first
``dynamo_start``, holds that compile for ``--hold`` seconds, writes the rest (the compile ends),
then trains.  The timeouts are seconds, so each attempt takes a few.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.events import Event, StageProgress
from cockpit.core.layers import Outcome, Stage, Status
from tests.lab import await_for
from tests.lab.runs import script_command

pytestmark = pytest.mark.lab

FIXTURES = Path(__file__).parent / "fixtures" / "torch_trace"
STARTUP = 3
HOLD = 7


def fixture_in(lab: Any, case: str = "recompile_storm") -> Path:
    dest = Path(lab.workspace()) / f"fixture-{case}"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(FIXTURES / case, dest)
    return dest


def held(lab: Any, hold: float = HOLD) -> str:
    return script_command(lab, "held_compile.py", fixture_in(lab), "--hold", hold, "--steps", 30)


def waits(eng: Any) -> list[tuple[float, Stage]]:
    """The verify progress stage's announcements (what it waits for, its bar), with when."""
    seen: list[tuple[float, Stage]] = []

    def on(ev: Event) -> None:
        if isinstance(ev, StageProgress) and ev.stage.name.endswith("progress") and ev.stage.status is Status.RUNNING and ev.stage.detail:
            seen.append((time.time(), ev.stage))

    eng.subscribe(on)
    return seen


def progress_stage(res: Any) -> Stage:
    return next(s for s in res.verdict.stages if s.name == "verify: progress")


async def test_a_compile_longer_than_startup_timeout_is_pending_then_passes(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": held(lab), "startup_timeout": STARTUP},
                     verify={"startup_timeout_from": "first_compile", "compile_timeout": 60})
    eng = engines(cfg)
    seen = waits(eng)
    res = await eng.attempt("a long first compile")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert res.job is not None and res.job.launched_at is not None
    launched = res.job.launched_at
    # while it compiled, past startup_timeout from launch: pending, shown as compiling, against compile_timeout
    compiling = [(t, s) for t, s in seen if s.detail.startswith("compiling `grow` (recompile_storm.py:14) for")]
    assert compiling, [s.detail for _, s in seen]
    late = [(t, s) for t, s in compiling if t > launched + STARTUP + 0.5]
    assert late, f"no 'compiling' announcement past startup_timeout: {[(round(t - launched, 1), s.detail) for t, s in seen]}"
    assert late[-1][1].data["wait"] == {"since": launched, "deadline_s": 60}
    assert "startup_timeout counts from the end of the first compile" in late[-1][1].detail
    # the verdict says where the clock counted from: the first compile's end, after the hold
    pr = progress_stage(res)
    m = re.search(r"the first compile ended ([\d.]+)s after launch: startup_timeout counts from there", pr.detail)
    assert m is not None, pr.detail
    assert float(m.group(1)) >= HOLD - 1.5 > STARTUP, pr.detail


async def test_the_same_compile_counted_from_launch_fails_still_compiling(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": held(lab), "startup_timeout": STARTUP}, verify={"compile_timeout": 60})
    assert cfg.verify.startup_timeout_from == "launch"
    res = await engines(cfg).attempt("a long first compile, from launch")
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and fs is not None and fs.layer.value == "app", res.verdict.summary()
    assert re.search(r"still compiling `grow` \(recompile_storm\.py:14\) for \d+ s: no progress marker within startup_timeout \(3s\)$",
                     fs.detail), fs.detail
    assert 'startup_timeout_from = "first_compile"' in fs.advice, fs.advice


async def test_a_compile_past_compile_timeout_fails_naming_the_frame(lab: Any, lab_config: Any, engines: Any) -> None:
    cmd = script_command(lab, "replay_trace.py", fixture_in(lab), "--over", 1, "--hang")  # a compile that never ends
    cfg = lab_config(job={"command": cmd, "startup_timeout": 2}, verify={"startup_timeout_from": "first_compile", "compile_timeout": 6})
    res = await engines(cfg).attempt("a compile that never ends")
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and fs is not None and fs.layer.value == "app", res.verdict.summary()
    m = re.search(r"still compiling `grow` \(recompile_storm\.py:14\) for (\d+) s: no progress marker within compile_timeout \(6s\) "
                  r"after launch, the first compile not ended", fs.detail)
    assert m is not None, fs.detail
    assert int(m.group(1)) > 2  # not failed at startup_timeout: it waited for compile_timeout
    assert "raise it if the model needs longer" in fs.advice and "cockpit stacks" in fs.advice, fs.advice
    assert fs.data["compiling"][0]["function"] == "grow"


async def test_without_a_trace_it_counts_from_launch_and_says_so(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": held(lab), "startup_timeout": STARTUP}, compile={"trace": False},
                     verify={"startup_timeout_from": "first_compile", "compile_timeout": 60})
    eng = engines(cfg)
    seen = waits(eng)
    res = await eng.attempt("no trace")
    assert res.job is not None and res.job.trace_dir == ""
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and fs is not None and fs.name == "verify: progress", res.verdict.summary()
    assert fs.detail.startswith("alive but no progress marker within startup_timeout (3s) (") and fs.detail.endswith(
        "); startup_timeout counts from launch: the job writes no torch.compile trace ([compile] trace is off)"), fs.detail
    said = [s.detail for _, s in seen]
    assert said and all("startup_timeout counts from launch: the job writes no torch.compile trace" in d for d in said), said


async def test_cockpit_verify_run_later_judges_a_job_still_compiling_pending(lab: Any, lab_config: Any, engines: Any) -> None:
    cmd = script_command(lab, "replay_trace.py", fixture_in(lab), "--over", 1, "--hang")
    first = {"startup_timeout_from": "first_compile", "compile_timeout": 60}
    cfg = lab_config(job={"command": cmd, "startup_timeout": 2}, verify=first)
    eng = engines(cfg)
    v = await eng.run_action("launch")
    assert v.failed_stage is None and eng.job is not None and eng.job.launched_at, v.summary()
    launched = eng.job.launched_at
    await await_for(lambda: time.time() > launched + 3, 20, "startup_timeout from launch to pass")
    later = engines(cfg)  # `cockpit verify` run later: a new cockpit that knows the job, its trace follower only starting
    later.set_job(eng.job, None)
    v = await later.run_action("verify")
    pr = next((s for s in v.stages if s.name.endswith("progress")), None)
    assert pr is not None, [(s.name, s.status.value, s.detail) for s in v.stages]
    assert v.failed_stage is None and pr.status is Status.PENDING, v.summary()
    assert pr.detail.startswith("compiling `grow` (recompile_storm.py:14) for "), pr.detail
    assert pr.data["wait"] == {"since": launched, "deadline_s": 60}
    # counted from launch, the same job at the same moment fails
    from_launch = engines(lab_config(job={"command": cmd, "startup_timeout": 2}))
    from_launch.set_job(eng.job, None)
    v = await from_launch.run_action("verify")
    fs = v.failed_stage
    assert fs is not None and fs.layer.value == "app" and "no progress marker within startup_timeout (2s)" in fs.detail, v.summary()
