"""Verdicts that stay true, against the lab (real sshd, emulated pct, real Python jobs from
tests/lab/jobs/r3_*.py copied into the container's workspace):

* a loss that turns NaN while the loop goes on fails verify, or after a pass makes the fate
  ``diverged (app)``, naming the step and the line (``[verify] nonfinite = "warn"``: said, passed);
* a tqdm bar on stderr (carriage returns, no newline) is progress as it is drawn;
* a deadlocked loop under a chatty heartbeat thread is stalled for a fresh ``status``/``verify``:
  dated by its lines' own timestamps, or followed for one ``stall_after`` window without them;
* with ``capture_output = false`` the console capture is followed live: data-loader threads that
  die there fail the attempt, and a later crash's traceback there is the fate's cause.
"""

from __future__ import annotations

import shlex
import time

import pytest

from cockpit.core.fate import fate_text
from cockpit.core.layers import Layer, Outcome, Status
from cockpit.core.status import collect_status
from tests.lab import await_for
from tests.lab.runs import fate_of, pct_or_docker, script_command

pytestmark = pytest.mark.lab

DOCKER_CT = 239


@pytest.fixture(params=["pct", "docker"])
def runtime(request, lab, lab_config):
    """``(make_cfg, ctid)``: the pct container 200, or a docker container the engine emulator answers for."""
    yield from pct_or_docker(request.param, lab, lab_config, "docker-r3log", DOCKER_CT)


def stage(v, name):
    return next(s for s in v.stages if s.name == name)


# ------------------------------------------------------------------------------- NaN is not healthy
async def test_a_loss_that_turns_nan_while_settling_fails_verify_naming_step_and_line(lab, lab_config, engines):
    cfg = lab_config(job={"command": script_command(lab, "r3_nan.py", 0, 5, 0.1)})
    res = await engines(cfg).attempt("lr 3e-2")
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.APP, res.verdict.summary()
    fs = res.verdict.failed_stage
    assert fs.name == "verify: settled", fs.name
    assert fs.detail.startswith("diverged: loss turned non-finite (nan) at step 5: line 5: step 5 loss nan grad_norm nan"), fs.detail
    assert fs.data["nonfinite"]["step"] == 5 and "learning rate" in (fs.advice or "")


async def test_a_loss_that_turns_nan_after_the_pass_is_the_fate_diverged(lab, runtime, engines):
    make, ctid = runtime
    cfg = make(job={"command": script_command(lab, "r3_nan.py", 0, 30, 0.1, ctid=ctid)})  # NaN 3 s in: after the 1 s settle window
    res = await engines(cfg).attempt("lr 1e-2")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()

    def diverged():
        f = fate_of(cfg, res.attempt)
        return f if f is not None and f.state == "diverged" else None

    f = await await_for(diverged, timeout=20, interval=0.1)
    assert f.layer == "app" and f.final, f
    assert f.cause.startswith("loss turned non-finite (nan) at step 30: line 30: step 30 loss nan"), f.cause
    assert fate_text(f).startswith("diverged (app) after ")
    report = await collect_status(cfg, quick=True)  # ``cockpit status``: the same story
    la = report["latest_attempt"]
    assert la["outcome"] == "passed" and la["fate"]["state"] == "diverged" and la["fate"]["layer"] == "app", la["fate"]


async def test_nonfinite_warn_passes_and_says_so(lab, lab_config, engines):
    cfg = lab_config(job={"command": script_command(lab, "r3_nan.py", 0, 5, 0.1)}, verify={"nonfinite": "warn"})
    res = await engines(cfg).attempt("only a warning")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    se = stage(res.verdict, "verify: settled")
    assert "warning: loss turned non-finite (nan) at step 5" in se.detail, se.detail


# ------------------------------------------------------------------------------- progress in unfinished lines
async def test_a_tqdm_bar_without_newlines_is_progress(lab, runtime, engines):
    make, ctid = runtime
    cfg = make(job={"command": script_command(lab, "r3_tqdm.py", 8, 0.5, ctid=ctid), "progress_pattern": "it/s", "startup_timeout": 3})
    eng = engines(cfg)
    res = await eng.attempt("bar on stderr")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    pr = stage(res.verdict, "verify: progress")
    assert pr.status is Status.OK and "it/s" in pr.detail and "/8 [" in pr.detail, pr.detail

    def finished():
        f = fate_of(cfg, res.attempt)
        return f if f is not None and f.final else None

    f = await await_for(finished, timeout=20, interval=0.1)
    assert f.state == "finished" and f.last_progress is not None and "8/8 [" in f.last_progress, f
    m = eng.metrics.get(res.attempt)  # each redraw is a line for the metrics too
    assert m is not None and len(m.series["loss"].ys) == 8, m.series.keys() if m else None


# ------------------------------------------------------------------------------- a hang hidden by chatter
def _steps_then_heartbeats(lab, log_path: str, beats: int, ctid: int = 200):
    def ready():
        text = lab.exec_in(ctid, f"cat {shlex.quote(log_path)}").stdout
        tail = text.partition("step 12 ")[2]
        return tail.count("heartbeat") >= beats
    return ready


async def test_a_deadlock_under_a_heartbeat_is_stalled_for_a_fresh_reader_by_the_lines_timestamps(lab, runtime, engines):
    make, ctid = runtime
    cfg = make(job={"command": script_command(lab, "r3_heartbeat.py", 12, 0.1, "--stamp", ctid=ctid), "progress_pattern": r"step \d+ loss"},
               verify={"stall_after": 2})
    eng = engines(cfg)
    res = await eng.attempt("deadlocks at step 12", follow=False)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(_steps_then_heartbeats(lab, res.job.log_path, 7, ctid), timeout=20, interval=0.2)  # 3.5 s of heartbeats

    t0 = time.monotonic()
    report = await collect_status(cfg, quick=True)
    la = report["latest_attempt"]
    assert la["fate"]["state"] == "stalled" and la["fate"]["layer"] == "app", la["fate"]
    assert "no progress for" in la["fate"]["cause"] and "step 12 loss" in la["fate"]["cause"], la["fate"]["cause"]
    v = await eng.run_action("verify")  # ``cockpit verify``: a fresh reader, judged at once from the timestamps
    assert time.monotonic() - t0 < 6
    se = stage(v, "settled")
    assert se.status is Status.FAIL and se.detail.startswith("stalled: no progress for"), v.summary()


async def test_a_deadlock_under_a_heartbeat_without_timestamps_is_followed_one_window_then_stalled(lab, lab_config, engines):
    cfg = lab_config(job={"command": script_command(lab, "r3_heartbeat.py", 12, 0.1)}, verify={"stall_after": 2})
    eng = engines(cfg)
    res = await eng.attempt("deadlocks at step 12", follow=False)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(_steps_then_heartbeats(lab, res.job.log_path, 7), timeout=20, interval=0.2)

    t0 = time.monotonic()
    v = await eng.run_action("verify")
    took = time.monotonic() - t0
    se = stage(v, "settled")
    assert se.status is Status.FAIL and se.detail.startswith("stalled: no progress for"), v.summary()
    assert took >= 1.0, took  # it could not tell from the log: it followed the job before judging
    report = await collect_status(cfg, quick=True)
    assert report["latest_attempt"]["fate"]["state"] == "stalled", report["latest_attempt"]["fate"]


# ------------------------------------------------------------------------------- console files are logs
def _console_cfg(lab, make, *args: object, ctid: int = 200):
    ws = lab.workspace(ctid)
    return make(job={"command": script_command(lab, "r3_console.py", f"{ws}/r3con-1.log", 1000, *args, 0.1, ctid=ctid),
                     "log": f"{ws}/r3con-{{attempt}}.log", "capture_output": False})


async def test_thread_tracebacks_in_the_console_capture_fail_the_attempt_while_it_runs(lab, lab_config, engines):
    cfg = _console_cfg(lab, lab_config, 3, 0)  # loaders die at step 3; the loop trains on
    res = await engines(cfg).attempt("wrong shard index")
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.APP, res.verdict.summary()
    fs = res.verdict.failed_stage
    assert fs.name == "verify: settled", fs.name
    # both named, in the order their tracebacks reached the console (the two threads die at once)
    assert any(f"threads {a}, {b} died" in fs.detail for a, b in (("loader-7", "loader-9"), ("loader-9", "loader-7"))), fs.detail
    assert "KeyError" in fs.detail


async def test_a_crash_whose_traceback_is_in_the_console_capture_is_the_fates_cause(lab, runtime, engines):
    make, ctid = runtime
    cfg = _console_cfg(lab, make, 0, 30, ctid=ctid)  # the loop raises at step 30: 3 s in, after the pass
    res = await engines(cfg).attempt("no labels")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()

    def died():
        f = fate_of(cfg, res.attempt)
        return f if f is not None and f.final else None

    f = await await_for(died, timeout=20, interval=0.1)
    assert f.state == "died" and f.layer == "app", f
    assert "exited with code 1" in f.cause and "RuntimeError" in f.cause and "no traceback" not in f.cause, f.cause
