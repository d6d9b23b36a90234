"""Loop death is death, against the lab: real sshd, emulated pct, a real Python job.

``jobsim.py --crash loopdeath`` is a real interpreter whose main thread really raises
``FloatingPointError`` while three non-daemon threads it started (``drafter-0..2``, named in
``/proc/PID/task/*/comm``) keep the process alive for ever.  Before loop death, each of these read
``running`` (and a verify during the settle window read the error only, with nothing saying the
job was over); after, the fate is ``died (app)``, the cause names the exception and the threads
that hold the process, and the process is still there until the user stops it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core.layers import Layer, Outcome, Status
from cockpit.core.status import collect_status
from tests.lab import await_for
from tests.lab.runs import fate_of

pytestmark = pytest.mark.lab

DRAFTERS = ("drafter-0", "drafter-1", "drafter-2")


def loopdeath_job(lab, crash_at: int, *more: object) -> str:
    return lab.jobsim_command("--steps", 0, "--interval", 0.05, "--crash", "loopdeath", "--crash-at", crash_at, *more)


def assert_loop_death_cause(cause: str) -> None:
    assert "the training loop raised FloatingPointError at " in cause, cause
    assert "loss is nan at step" in cause and "the process is still alive" in cause, cause
    assert "held by 3 threads (drafter-0, drafter-1, drafter-2)" in cause, cause
    assert "it will not exit by itself" in cause and "cockpit stop" in cause, cause


def job_threads(lab, log_path: str) -> list[str]:
    """The names of the live job's threads (the process really is still there)."""
    out = lab.exec_in(200, "for p in $(pgrep -f 'crash loopdeath'); do cat /proc/$p/task/*/comm; done").stdout
    return out.split()


async def test_a_dead_loop_under_live_threads_is_died_in_status_history_and_verify(lab, lab_config, engines, tmp_path):
    go = f"{lab.workspace()}/loopdeath.go"  # the loop dies once the attempt has passed and the test creates it
    lab.exec_in(200, f"rm -f {go}")
    cfg = lab_config(job={"command": loopdeath_job(lab, 5, "--go-file", go)})
    eng = engines(cfg)
    res = await eng.attempt("diverges after it passed", follow=False)  # nobody follows: the headless path
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log_path = res.job.log_path
    lab.exec_in(200, f"touch {go}")
    await await_for(lambda: "FloatingPointError: loss is nan" in lab.exec_in(200, f"cat {log_path}").stdout,
                   timeout=20, interval=0.2)
    assert set(DRAFTERS) <= set(job_threads(lab, log_path))  # the process lives on, held by them

    report = await collect_status(cfg, quick=True)  # ``cockpit status --json``
    la = report["latest_attempt"]
    assert la["outcome"] == "passed" and la["fate"]["state"] == "died" and la["fate"]["layer"] == "app", la["fate"]
    assert_loop_death_cause(la["fate"]["cause"])
    assert la["fate"]["last_progress"].startswith("step ")

    h = subprocess.run([sys.executable, "-m", "cockpit", "history", "--json", "-c", str(cfg.path)],
                       capture_output=True, text=True, timeout=60)
    assert h.returncode == 0, h.stderr
    row = json.loads(h.stdout)[-1]
    assert row["outcome"] == "passed" and row["fate"]["state"] == "died" and row["fate"]["layer"] == "app"
    assert_loop_death_cause(row["fate"]["cause"])

    v = await eng.run_action("verify")  # ``cockpit verify`` judges now: not alive as a job
    alive = [s for s in v.stages if s.name == "alive"][0]
    assert alive.status is Status.FAIL and alive.layer is Layer.APP, v.summary()
    assert_loop_death_cause(alive.detail)
    assert alive.data["threads"] and sorted(next(iter(alive.data["threads"].values()))) == list(DRAFTERS)

    stop = await eng.run_action("stop")  # the user's choice; the story stays the death it was
    assert stop.ok, stop.summary()
    assert not [n for n in job_threads(lab, log_path) if n in DRAFTERS]
    assert fate_of(cfg, res.attempt).state == "died"


async def test_the_follower_sees_the_loop_die(lab, lab_config, engines):
    cfg = lab_config(job={"command": loopdeath_job(lab, 80)})
    eng = engines(cfg)
    res = await eng.attempt("followed to its end")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()

    def died():
        f = fate_of(cfg, res.attempt)
        return f if f is not None and f.state == "died" else None

    f = await await_for(died, timeout=20, interval=0.1)
    assert f.layer == "app" and f.after_s is not None and f.after_s > 2.0, f
    assert_loop_death_cause(f.cause)


async def test_a_loop_that_dies_in_the_settle_window_fails_the_attempt_with_that_cause(lab, lab_config, engines):
    cfg = lab_config(job={"command": loopdeath_job(lab, 20)}, verify={"settle": 4.0})  # dies 1 s in, settle runs to 4 s
    eng = engines(cfg)
    res = await eng.attempt("diverges while settling")
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.APP, res.verdict.summary()
    fs = res.verdict.failed_stage
    assert fs.name == "verify: alive", fs.name
    assert_loop_death_cause(fs.detail)
    assert "after launch" in fs.detail and "last progress: step" in fs.detail
    assert fs.data["loop_death"]["exception"] == "FloatingPointError"
    f = await await_for(lambda: fate_of(cfg, res.attempt), timeout=10, interval=0.1)
    assert f.state == "died" and f.layer == "app", f


async def test_the_rank_whose_loop_died_is_named_while_the_other_waits_in_its_collective(lab, lab_config, engines):
    ws = lab.workspace(200)
    script = Path(ws) / "ranks_loopdeath.py"
    shutil.copy(Path(__file__).parent / "lab" / "ranks_loopdeath.py", script)
    python = lab.jobsim_argv()[0]
    cfg = lab_config(job={"command": shlex.join([python, str(script), "80", "0.05"]), "progress_pattern": r"\]:step \d+"})
    eng = engines(cfg)
    res = await eng.attempt("two ranks, rank 1 diverges")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()

    def died():
        f = fate_of(cfg, res.attempt)
        return f if f is not None and f.state == "died" else None

    f = await await_for(died, timeout=20, interval=0.1)
    assert f.layer == "app", f
    assert f.cause.startswith("rank 1's training loop raised FloatingPointError at "), f.cause
    assert re.search(r"still alive, held by 1 non-daemon thread \(pt_nccl_watchdg of pid \d+\)", f.cause), f.cause


EXITS_SOON = """
import sys, threading, time
STEP_S = 0.05  # the job's own pace
for i in range(1, 21):
    print(f"step {i} loss 2.5", flush=True)
    time.sleep(STEP_S)
threading.Thread(target=time.sleep, args=(0.8,), name="flusher").start()  # non-daemon, but it ends (after the 0.3 s error grace)
raise FloatingPointError("loss is nan at step 20")
"""


async def test_a_process_that_exits_soon_after_its_traceback_is_judged_by_its_exit(lab, lab_config, engines):
    """The loop's death counts only once the process outlived it: one that exits a moment later is
    a plain death with its exit status, never "it will not exit by itself"."""
    script = Path(lab.workspace(200)) / "exits_soon.py"
    script.write_text(EXITS_SOON)
    cfg = lab_config(job={"command": shlex.join([lab.jobsim_argv()[0], str(script)])}, verify={"settle": 4.0})
    res = await engines(cfg).attempt("raises, then exits")
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.APP, res.verdict.summary()
    fs = res.verdict.failed_stage
    assert fs.name == "verify: alive" and "exited with code 1" in fs.detail and "FloatingPointError" in fs.detail, fs.detail
    assert "still alive" not in fs.detail
