"""Slurm's relaunch loop against a real slurmctld + slurmd (tests/lab/slurm.py): the node has one
CPU, so a job cockpit forgot holds it and the next one waits PENDING (Resources) behind it.

Every job cockpit submitted is found again by the id the journal recorded (a failed attempt's job
that runs on, a pending one, one whose cockpit was killed right after sbatch answered), a stop
cancels all of them that are still queued or running (and no one else's), the fate of each comes
from Slurm's own state, and a pending attempt is its own outcome with its own exit code.  Each
step is a new cockpit (a new Engine, or the real CLI), as the user's ``cockpit attempt`` /
``cockpit stop`` / ``cockpit history`` are; every state is read from Slurm itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.job import JobRecord
from cockpit.core.fate import story
from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome, Stage, Status
from tests.lab.slurm import PARTITION, SlurmLab, slurm_lab  # noqa: F401
from tests.lab.util import wait_for

pytestmark = pytest.mark.lab

STEP = ("--steps", 0, "--interval", 0.1)
#: the seed's race: the drafter threads die after warm-up, the training loop runs on for ever
RACE = ("--steps", 0, "--interval", 0.1, "--threads", 3, "--crash", "fx", "--crash-at", 1, "--keep-stepping", -1)


@pytest.fixture
def slurm(slurm_lab: SlurmLab) -> Iterator[SlurmLab]:  # noqa: F811
    slurm_lab.reset()
    yield slurm_lab
    slurm_lab.reset()


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    return tmp_path / "cockpit.toml"


@pytest.fixture
def slurm_config(lab: Any, slurm: SlurmLab, conf: Path) -> Callable[..., Any]:
    from cockpit.core.config import load_config

    src = slurm.work / "src"
    src.mkdir(exist_ok=True)
    (src / "train.py").write_text("print('the code under test')\n")

    def make(*args: object, **job: Any) -> Any:
        lab.write_config(
            conf,
            target={"name": "cluster", "runtime": "slurm", "container": None},
            job={"workdir": str(slurm.work), "log": f"{slurm.work}/train-{{attempt}}.log", "command": lab.jobsim_command(*(args or STEP)),
                 "stop_timeout": 5, "startup_timeout": 20, **job},
            deploy={"source": str(src), "dest": str(slurm.work / "deployed")},
            cache={"paths": [str(slurm.dir / "cache")]},
            gpu=None,
            slurm={"partition": PARTITION, "queue_wait": 3},
        )
        return load_config(conf)

    return make


def _stage(verdict: Any, suffix: str) -> Any:
    stages = verdict.stages if hasattr(verdict, "stages") else verdict["stages"]
    names = [s.name if hasattr(s, "name") else s["name"] for s in stages]
    found = [s for s, n in zip(stages, names, strict=True) if n.endswith(suffix)]
    assert found, f"no stage {suffix!r} in {names}"
    return found[0]


def _cli(conf: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cockpit", *args, "-c", str(conf)], capture_output=True, text=True, timeout=timeout)


def _history(conf: Path) -> list[dict[str, Any]]:
    r = _cli(conf, "history", "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    rows: list[dict[str, Any]] = json.loads(r.stdout)
    return rows


async def test_next_attempt_cancels_the_failed_attempts_job_that_runs_on(engines: Any, slurm_config: Any, slurm: SlurmLab) -> None:
    first = await engines(slurm_config(*RACE)).attempt("slurm: the seed's race", wait=True, follow=False)
    assert first.outcome is Outcome.FAILED and first.verdict.layer is Layer.APP, first.verdict.summary()
    assert first.job is not None
    old = first.job.sched_id
    assert slurm.job_field(old, "JobState") == "RUNNING"  # the loop runs on: the job holds the only node

    eng = engines(slurm_config())  # the fix, from a new cockpit (`cockpit attempt` again)
    second = await eng.attempt("slurm: the fix", wait=True, follow=False)
    ident, term = _stage(second.verdict, "stop: identify job"), _stage(second.verdict, "stop: terminate")
    assert ident.status is Status.OK and f"{old} RUNNING (attempt {first.attempt})" in ident.detail, ident.detail
    assert term.status is Status.OK and f"cancelled Slurm job {old}" in term.detail, term.detail
    assert slurm.job_field(old, "JobState") == "CANCELLED"
    print(f"\nstop after a failed attempt ({second.timings.get('stop', 0):.2f}s):\n  identify job: {ident.detail}\n  terminate: {term.detail}")
    # the new job got the node: not PENDING (Resources) behind the old one
    assert second.outcome is Outcome.PASSED, second.verdict.summary()
    assert second.job is not None and slurm.job_field(second.job.sched_id, "JobState") == "RUNNING"
    assert slurm.job_field(old, "EndTime") <= slurm.job_field(second.job.sched_id, "StartTime")
    rec = eng.journal.get(first.attempt)
    assert rec is not None and rec.fate is not None and rec.fate["state"] == "stopped", rec.fate
    assert old in rec.fate["cause"]


def _old_record(j: Journal, slurm: SlurmLab, n: int, note: str, job_id: str, outcome: Outcome) -> int:
    """An attempt as cockpit's launch journals it: the sbatch answer in the launch's ``submit`` stage."""
    aid = j.start_attempt(note, "cluster", log_path=f"{slurm.work}/train-{n}.log")
    rec = JobRecord(attempt=aid, log_path=f"{slurm.work}/train-{n}.log", launcher="sbatch", scheduler="slurm", sched_id=job_id,
                    launched_at=time.time(), workdir=str(slurm.work))
    j.record_stage(aid, "launch", Stage("submit", Status.OK, Layer.HOST, f"Slurm job {job_id} submitted", data={"job": rec.to_dict()}))
    j.record(aid, "fate", state="running", cause=f"Slurm job {job_id} RUNNING", at=time.time())
    j.finish_attempt(aid, outcome, layer=Layer.APP if outcome is Outcome.FAILED else None)
    return aid


def test_cockpit_stop_cancels_every_own_job_in_the_queue_and_no_one_elses(slurm_config: Any, slurm: SlurmLab, conf: Path) -> None:
    cfg = slurm_config()
    j = Journal(cfg.journal_path)
    gone = slurm.sbatch("--job-name=cockpit-cluster-1", "--wrap", "sleep 300")
    slurm.wait_state(gone, "RUNNING")
    a_gone = _old_record(j, slurm, 1, "cancelled from outside, journal still says running", gone, Outcome.PASSED)
    slurm.run("/usr/bin/scancel", gone)
    slurm.wait_state(gone, "CANCELLED")
    # two more that ended by themselves while the journal still said running: a failure, a clean finish
    failed = slurm.sbatch("--job-name=cockpit-cluster-1", "--wrap", "exit 3")
    slurm.wait_state(failed, "FAILED")
    a_failed = _old_record(j, slurm, 1, "its job failed later", failed, Outcome.PASSED)
    done = slurm.sbatch("--job-name=cockpit-cluster-1", "--wrap", "true")
    slurm.wait_state(done, "COMPLETED")
    a_done = _old_record(j, slurm, 1, "its job finished", done, Outcome.PASSED)
    running = slurm.sbatch("--job-name=cockpit-cluster-2", "--wrap", "sleep 300")
    slurm.wait_state(running, "RUNNING")
    a_run = _old_record(j, slurm, 2, "failed, its job runs on", running, Outcome.FAILED)
    queued = slurm.sbatch("--job-name=cockpit-cluster-3", "--wrap", "sleep 300")
    slurm.wait_state(queued, "PENDING")
    a_queued = _old_record(j, slurm, 3, "queued behind it", queued, Outcome.RUNNING)  # as an older cockpit closed a pending attempt
    # someone else's job, with a name like cockpit's: never touched (cockpit finds its jobs by id)
    other = slurm.sbatch("--job-name=cockpit-cluster-3", "--wrap", "sleep 300")
    slurm.wait_state(other, "PENDING")

    r = _cli(conf, "stop", "--json", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    v = json.loads(r.stdout)
    ident, term = _stage(v, "identify job"), _stage(v, "terminate")
    assert f"{running} RUNNING (attempt {a_run})" in ident["detail"] and f"{queued} PENDING (attempt {a_queued})" in ident["detail"], ident
    assert running in term["detail"] and queued in term["detail"] and other not in term["detail"], term
    assert slurm.job_field(running, "JobState") == "CANCELLED"
    assert slurm.job_field(queued, "JobState") == "CANCELLED"
    assert slurm.job_field(other, "JobState") in ("PENDING", "RUNNING")  # took the freed node, or waits for it
    assert _stage(v, "nothing left")["status"] == "ok"
    fates = {row["attempt"]: row["fate"] for row in _history(conf)}
    assert fates[a_run]["state"] == fates[a_queued]["state"] == "stopped", fates
    # the job cancelled long ago by someone else: its attempt no longer reads `passed → running`
    assert fates[a_gone]["state"] == "stopped" and "CANCELLED" in fates[a_gone]["cause"], fates[a_gone]
    assert fates[a_failed]["state"] == "died" and "FAILED" in fates[a_failed]["cause"] and "code 3" in fates[a_failed]["cause"], fates[a_failed]
    assert fates[a_done]["state"] == "finished", fates[a_done]


async def test_cancelled_from_outside_reads_stopped_in_history(engines: Any, slurm_config: Any, slurm: SlurmLab, conf: Path) -> None:
    res = await engines(slurm_config()).attempt("slurm: will be scancelled", wait=True, follow=False)
    assert res.outcome is Outcome.PASSED and res.job is not None, res.verdict.summary()
    slurm.run("/usr/bin/scancel", res.job.sched_id)
    slurm.wait_state(res.job.sched_id, "CANCELLED")
    fate = await engines(slurm_config()).reconcile()  # what `cockpit status` does, in a new cockpit
    assert fate is not None and fate.state == "stopped" and "CANCELLED" in fate.cause, fate
    row = _history(conf)[-1]
    assert row["attempt"] == res.attempt and row["fate"]["state"] == "stopped", row["fate"]
    assert story(row["outcome"], row["layer"], row["fate"], short=True).startswith("passed → stopped")


def test_pending_attempt_is_pending_with_exit_code_3_and_its_job_is_still_cockpits(slurm_config: Any, slurm: SlurmLab, conf: Path) -> None:
    holder = slurm.sbatch("--wrap", "sleep 300")  # not cockpit's: it holds the only node
    slurm.wait_state(holder, "RUNNING")
    slurm_config()
    r = _cli(conf, "attempt", "--note", "queued behind another job", "--json")
    assert r.returncode == 3, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    d = json.loads(r.stdout)
    assert d["outcome"] == "pending" and d["layer"] is None, d["summary"]
    job_id = d["job"]["sched_id"]
    assert slurm.job_field(job_id, "JobState") == "PENDING"
    row = _history(conf)[-1]
    assert row["outcome"] == "pending" and row["job"]["sched_id"] == job_id
    # the pending job is cockpit's: stop cancels it, and only it
    s = _cli(conf, "stop", "--json", timeout=60)
    assert s.returncode == 0, s.stdout + s.stderr
    assert job_id in _stage(json.loads(s.stdout), "terminate")["detail"]
    assert slurm.job_field(job_id, "JobState") == "CANCELLED"
    assert slurm.job_field(holder, "JobState") == "RUNNING"


def test_a_job_whose_cockpit_was_killed_after_sbatch_answered_is_still_stopped(slurm_config: Any, slurm: SlurmLab, conf: Path) -> None:
    cfg = slurm_config("--steps", 0, "--interval", 0.1, "--start-delay", 60, startup_timeout=120)
    p = subprocess.Popen([sys.executable, "-m", "cockpit", "attempt", "--note", "will be killed", "-c", str(conf)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        j = Journal(cfg.journal_path)
        rec = wait_for(lambda: next((a for a in j.attempts() if a.job and a.job.get("sched_id")), None), 60,
                       lambda: f"no job id journalled: {[(a.attempt, [s.stage.name for s in a.stages]) for a in j.attempts()]}")
        os.kill(p.pid, signal.SIGKILL)  # no chance to say anything more
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    job_id = rec.job["sched_id"]
    slurm.wait_state(job_id, "RUNNING", "PENDING")
    r = _cli(conf, "stop", "--json", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"cancelled Slurm job {job_id}" in _stage(json.loads(r.stdout), "terminate")["detail"]
    assert slurm.job_field(job_id, "JobState") == "CANCELLED"
    row = next(x for x in _history(conf) if x["attempt"] == rec.attempt)
    assert row["outcome"] == "interrupted" and row["fate"]["state"] == "stopped", row
