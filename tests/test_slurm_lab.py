"""``runtime = "slurm"`` against a real slurmctld + slurmd (tests/lab/slurm.py) behind the lab's sshd.

Each test starts from an empty queue and an idle node (``slurm.reset()``); the node has one CPU, so
one job holds it.  A job's life is read from Slurm itself (``scontrol show job -o``), never from
cockpit, so every assertion fails if cockpit's story is not the scheduler's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome, Status
from tests.lab.slurm import NODE, PARTITION, SlurmLab, slurm_lab  # noqa: F401
from tests.lab.util import await_for

pytestmark = pytest.mark.lab

STEP = ("--steps", 0, "--interval", 0.1)


@pytest.fixture
def slurm(slurm_lab: SlurmLab) -> Iterator[SlurmLab]:  # noqa: F811
    slurm_lab.reset()
    yield slurm_lab
    slurm_lab.reset()


@pytest.fixture
def slurm_config(lab: Any, slurm: SlurmLab, tmp_path: Path) -> Callable[..., Any]:
    from cockpit.core.config import load_config

    src = slurm.work / "src"
    src.mkdir(exist_ok=True)
    (src / "train.py").write_text("print('the code under test')\n")

    def make(*args: object, slurm_over: dict[str, Any] | None = None, **job: Any) -> Any:
        path = tmp_path / "cockpit.toml"
        lab.write_config(
            path,
            target={"name": "cluster", "runtime": "slurm", "container": None},
            job={"workdir": str(slurm.work), "log": f"{slurm.work}/train-{{attempt}}.log", "command": lab.jobsim_command(*(args or STEP)),
                 "stop_timeout": 5, "startup_timeout": 20, **job},
            deploy={"source": str(src), "dest": str(slurm.work / "deployed")},
            cache={"paths": [str(slurm.dir / "cache")]},
            gpu=None,
            slurm={"partition": PARTITION, "queue_wait": 3, **(slurm_over or {})},
        )
        return load_config(path)

    return make


def _stage(res: Any, suffix: str) -> Any:
    return next(s for s in res.verdict.stages if s.name.endswith(suffix))


async def test_launch_runs_and_passes_then_stop_cancels(engines: Any, slurm_config: Any, slurm: SlurmLab) -> None:
    eng = engines(slurm_config())
    t0 = time.monotonic()
    res = await eng.attempt("slurm: healthy job", wait=True)
    took = time.monotonic() - t0
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    job = res.job
    assert job is not None and job.scheduler == "slurm" and job.sched_id.isdigit() and job.pid is None
    assert slurm.job_field(job.sched_id, "JobState") == "RUNNING"
    assert slurm.job_field(job.sched_id, "StdOut") == job.log_path  # --output is the attempt's log
    assert slurm.job_field(job.sched_id, "NodeList") == NODE
    assert "step" in Path(job.log_path).read_text()
    assert "Slurm job" in _stage(res, "submit").detail
    print(f"attempt against Slurm: {took:.2f}s; timings {res.timings}")
    v = await eng.run_action("stop")
    assert v.failed_stage is None, v.summary()
    assert slurm.job_field(job.sched_id, "JobState") == "CANCELLED"
    rec = eng.journal.get(res.attempt)
    assert rec is not None and rec.fate and rec.fate["state"] == "stopped"


async def test_crash_is_failed_app_with_the_seeds_error(engines: Any, slurm_config: Any, slurm: SlurmLab) -> None:
    eng = engines(slurm_config("--steps", 0, "--interval", 0.05, "--threads", 3, "--crash", "fx", "--crash-at", 1))
    res = await eng.attempt("slurm: the FX race", wait=True, follow=False)
    assert res.outcome is Outcome.FAILED, res.verdict.summary()
    assert res.verdict.layer is not None and res.verdict.layer.value == "app"
    assert res.first_error is not None and "FX" in res.first_error["label"]
    job = res.job
    assert job is not None
    slurm.wait_state(job.sched_id, "FAILED")
    assert slurm.job_field(job.sched_id, "ExitCode") == "1:0"
    fate = await eng.reconcile()
    assert fate is not None and fate.state == "died" and fate.layer == "app", fate


async def test_cancelled_from_outside_is_stopped(engines: Any, slurm_config: Any, slurm: SlurmLab) -> None:
    eng = engines(slurm_config())
    res = await eng.attempt("slurm: will be scancelled", wait=True, follow=False)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert res.job is not None
    slurm.run("/usr/bin/scancel", res.job.sched_id)
    slurm.wait_state(res.job.sched_id, "CANCELLED")
    fate = await eng.reconcile()
    assert fate is not None and fate.state == "stopped", fate  # it did not die of itself
    assert "CANCELLED" in fate.cause


async def test_queued_behind_a_job_holding_the_node_is_pending_never_failed(engines: Any, slurm_config: Any, slurm: SlurmLab) -> None:
    holder = slurm.sbatch("--wrap", "sleep 300")
    slurm.wait_state(holder, "RUNNING")
    eng = engines(slurm_config())
    res = await eng.attempt("slurm: queued", wait=True, follow=False)
    assert res.outcome is Outcome.PENDING, res.verdict.summary()  # neither failed nor untested
    assert res.verdict.failed_stage is None
    alive = _stage(res, "verify: alive")
    assert alive.status is Status.PENDING and "PENDING (Resources)" in alive.detail and "position 1 of 1" in alive.detail, alive.detail
    assert res.job is not None and slurm.job_field(res.job.sched_id, "JobState") == "PENDING"
    fate = await eng.reconcile()
    assert fate is not None and fate.state == "pending" and "Resources" in fate.cause
    # the node frees up: the queued job starts and its fate follows
    slurm.run("/usr/bin/scancel", holder)
    fate = await await_for(lambda: _running(eng), 20, "the queued job never started", interval=0.3)
    assert slurm.job_field(res.job.sched_id, "JobState") == "RUNNING"


async def _running(eng: Any) -> Any:
    f = await eng.reconcile()
    return f if f is not None and f.state == "running" else None


async def test_drained_node_is_untested_host(engines: Any, slurm_config: Any, slurm: SlurmLab) -> None:
    slurm.drain("test")
    eng = engines(slurm_config())
    res = await eng.attempt("slurm: drained", wait=True, follow=False)
    assert res.outcome is Outcome.UNTESTED, res.verdict.summary()
    assert res.verdict.layer is not None and res.verdict.layer.value == "host"
    fs = res.verdict.failed_stage
    assert fs is not None and "queued and cannot start" in fs.detail and "PENDING" in fs.detail, fs.detail
    assert res.job is not None and slurm.job_field(res.job.sched_id, "JobState") == "PENDING"


async def test_relaunch_cancels_the_old_job_first(engines: Any, slurm_config: Any, slurm: SlurmLab) -> None:
    eng = engines(slurm_config())
    first = await eng.attempt("slurm: first", wait=True, follow=False)
    assert first.outcome is Outcome.PASSED and first.job is not None
    second = await eng.attempt("slurm: second", wait=True, follow=False)
    assert second.outcome is Outcome.PASSED, second.verdict.summary()
    assert second.job is not None and second.job.sched_id != first.job.sched_id
    assert slurm.job_field(first.job.sched_id, "JobState") == "CANCELLED"
    # cancelled before the new one was submitted
    assert slurm.job_field(first.job.sched_id, "EndTime") <= slurm.job_field(second.job.sched_id, "SubmitTime")
    assert _stage(second, "stop: terminate").status is Status.OK
    rec = eng.journal.get(first.attempt)
    assert rec is not None and rec.fate and rec.fate["state"] == "stopped"


@pytest.mark.skipif(not os.environ.get("COCKPIT_SLOW"), reason="Slurm enforces time limits in whole minutes, checked every 30 s: "
                    "~90 s; set COCKPIT_SLOW=1 to run")
async def test_out_of_time_is_died_process(engines: Any, slurm_config: Any, slurm: SlurmLab) -> None:
    eng = engines(slurm_config(slurm_over={"time": "1"}))
    res = await eng.attempt("slurm: one minute", wait=True, follow=False)
    assert res.outcome is Outcome.PASSED and res.job is not None
    slurm.wait_state(res.job.sched_id, "TIMEOUT", timeout=150)
    fate = await eng.reconcile()
    assert fate is not None and fate.state == "died" and fate.layer == "process" and "TIMEOUT" in fate.cause, fate


async def test_the_process_pane_shows_the_jobs_processes_on_its_node(engines: Any, slurm_config: Any, slurm: SlurmLab) -> None:
    """The login node runs none of the job: its processes are asked on the node, through a step
    that overlaps the job's (srun --overlap), with the job's own pids from scontrol listpids."""
    eng = engines(slurm_config())
    res = await eng.attempt("slurm: where are its processes", wait=True, follow=False)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    v = await eng.observer.refresh_procs()
    assert v.error is None and v.nodes == [NODE], (v.error, v.nodes, v.findings)
    mine = [p for p in v.procs if p.pid in v.job_pids]
    assert mine and all(p.node == NODE for p in mine)
    assert any("jobsim" in p.args for p in mine), [(p.pid, p.args[:80]) for p in mine]
    assert not [f for f in v.findings if f.kind == "node-unreachable"]
    g = await eng.observer.refresh_gpu()  # the GPUs of the job's node, asked there (nvidia-smi through srun)
    assert g.error is None and g.snapshot is not None and g.snapshot.gpus, (g.error, g.snapshot and g.snapshot.findings)
    assert "H100" in g.snapshot.gpus[0].name
    await eng.run_action("stop")
    assert res.job is not None
    slurm.wait_state(res.job.sched_id, "CANCELLED")
    after = await eng.observer.refresh_procs()
    assert after.nodes == [] and "runs on no node" in after.note
    g2 = await eng.observer.refresh_gpu()
    assert g2.error and "runs on no node" in g2.error, g2.error  # said, not a login node's GPUs
