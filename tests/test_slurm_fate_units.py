"""Slurm's word on a job as its attempt's fate (:func:`cockpit.core.slurm.own.slurm_fate`), and the
journal finding a Slurm job id in the launch stage that got it from sbatch (pure: no cluster).
The lab counterpart, against a real slurmctld, is tests/test_slurm_relaunch_lab.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from cockpit.core.actions.job import JobRecord
from cockpit.core.journal import Journal, scheduler_jobs
from cockpit.core.layers import Layer, Outcome, Stage, Status
from cockpit.core.slurm.own import slurm_fate
from cockpit.core.slurm.scontrol import SlurmJob, parse_job_line


def _job(state: str, exit_code: str = "0:0", reason: str = "None") -> SlurmJob:
    line = (f"JobId=77 JobName=cockpit-cluster-3 UserId=ml(1000) JobState={state} Reason={reason} ExitCode={exit_code} "
            "RunTime=00:04:12 TimeLimit=01:00:00 NodeList=gpu-node-07 Partition=gpu")
    return SlurmJob("77", parse_job_line(line))


@pytest.mark.parametrize(("state", "exit_code", "fate", "layer", "said"), [
    ("CANCELLED", "0:15", "stopped", None, "CANCELLED"),
    ("COMPLETED", "0:0", "finished", None, "exited with code 0"),
    ("FAILED", "1:0", "died", "process", "FAILED (the batch script exited with code 1)"),
    ("TIMEOUT", "0:0", "died", "process", "TIMEOUT"),
    ("NODE_FAIL", "0:0", "died", "host", "NODE_FAIL"),
    ("OUT_OF_MEMORY", "0:125", "died", "container", "OUT_OF_MEMORY"),
    ("COMPLETED", "2:0", "died", "process", "COMPLETED (the batch script exited with code 2)"),
])
def test_an_ended_jobs_fate_is_slurms_state(state: str, exit_code: str, fate: str, layer: str | None, said: str) -> None:
    f = slurm_fate(_job(state, exit_code), now=1000.0)
    assert f is not None and (f.state, f.layer) == (fate, layer), f
    assert said in f.cause and "Slurm job 77" in f.cause, f.cause
    assert f.after_s == 252.0  # RunTime 00:04:12


def test_a_queued_or_running_job_is_no_end_and_a_forgotten_one_vanished() -> None:
    pending = slurm_fate(_job("PENDING", reason="Resources"))
    assert pending is not None and pending.state == "pending" and not pending.final and "Resources" in pending.cause
    running = slurm_fate(_job("RUNNING"))
    assert running is not None and running.state == "running" and not running.final
    gone = slurm_fate(SlurmJob("77", known=False, error="slurm_load_jobs error: Invalid job id specified; sacct: Slurm accounting storage is disabled"))
    assert gone is not None and gone.state == "vanished" and gone.final and "MinJobAge" in gone.cause
    # slurmctld not answering says nothing about the job
    assert slurm_fate(SlurmJob("77", known=False, error="slurm_load_jobs error: Unable to contact slurm controller")) is None


def _submitted(j: Journal, target: str, job_id: str) -> int:
    aid = j.start_attempt("n", target)
    rec = JobRecord(attempt=aid, launcher="sbatch", scheduler="slurm", sched_id=job_id, log_path=f"/w/train-{aid}.log")
    j.record_stage(aid, "launch", Stage("submit", Status.OK, Layer.HOST, f"Slurm job {job_id} submitted", data={"job": rec.to_dict()}))
    return aid


def test_the_journal_keeps_every_submitted_job_id_whatever_the_outcome(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.jsonl")
    failed = _submitted(j, "cluster", "101")
    j.finish_attempt(failed, Outcome.FAILED, layer=Layer.APP)
    pending = _submitted(j, "cluster", "102")
    j.finish_attempt(pending, Outcome.PENDING)
    _submitted(j, "other", "900")  # another target sharing the file: not this target's job
    interrupted = _submitted(j, "cluster", "103")  # cockpit died right after sbatch answered: still open
    recs = Journal(j.path).attempts()
    assert [r.job["sched_id"] if r.job else None for r in recs] == ["101", "102", "900", "103"]
    assert recs[0].log_path == "/w/train-1.log"
    assert recs[1].outcome is Outcome.PENDING
    assert scheduler_jobs(recs, "slurm", "cluster") == [(failed, "101"), (pending, "102"), (interrupted, "103")]
