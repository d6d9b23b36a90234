"""A trainer's exit status is the job's, however long the workers it started linger.

torch's DataLoader workers notice their parent's death only at their next five-second status
check; a worker may print a ``BrokenPipeError`` on its way out.  cockpit read the status of a
trainer that had lingering workers as a *launcher's* (:mod:`cockpit.core.actions.survivors`) and
followed the worker as "the trainer": a trainer that exited 1 from its own guard read ``passed``
then ``finished``, one killed by SIGKILL read "launcher exited 137", and one that exited 0 read
``died (app)`` from its worker's traceback, "its exit status was not observed".  The same for a
``train.sh`` that runs a monitor in the background (``sleep 60 &`` here, ``nvidia-smi dmon &`` in
life) and the trainer in the foreground: its exit 1 read ``passed``, "trainer pid N (sleep 60) continues".  The worker here
lingers until the test has judged the job (a gate file), so each reading is taken while it lives;
the trainer ends once a reading has seen it alive after its first step (as verify always does for a
job that trains for more than a moment).  When no reading saw a worker under its trainer at all, a
program the script leaves running cannot be told from a trainer a launcher left behind (``/proc`` no
longer says whose it was): cockpit reads it as the launcher's, a documented limit.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.jobstate import JobReader, JobState
from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import JOBS, final_fate

pytestmark = pytest.mark.lab


def _config(lab: Any, lab_config: Any, end: str, monkeypatch: Any, wrap: bool | str = False) -> tuple[Any, Path]:
    ws = Path(lab.workspace(200))
    shutil.copy(JOBS / "linger_worker.py", ws / "linger_worker.py")
    gate = ws / f"linger-gate-{end}"
    ends = Path(f"{gate}.end")
    gate.unlink(missing_ok=True)
    ends.unlink(missing_ok=True)
    real = JobReader.read

    async def read(reader: JobReader) -> JobState:  # the trainer ends once it was read alive with progress
        # progress seen before this reading: its process table was taken after the trainer's first
        # step, so it holds the workers forked before it (a reading that takes the table just before
        # the first step, and the step's line from the log after it, has not seen them)
        stepped = reader.scan.progress_count > 0
        st = await real(reader)
        if st.alive and st.exit_code is None and stepped:
            ends.touch()
        return st

    monkeypatch.setattr(JobReader, "read", read)
    cmd = shlex.join([lab.jobsim_argv()[0], str(ws / "linger_worker.py"), end, str(gate)])
    if wrap:  # a train.sh with a background monitor, the trainer in the foreground (then, maybe, a last step)
        cmd = shlex.join(["bash", "-c", f"sleep 60 & {cmd}" + (f"; {wrap}" if isinstance(wrap, str) else "")])
    return lab_config(job={"command": cmd}, verify={"settle": 1.0, "fate_interval": 0.3}), gate


@pytest.mark.parametrize(("end", "words", "wrap"), [("exit1", "exited with code 1", False), ("sigkill", "killed by signal 9", False),
                                                    ("exit1", "exited with code 1", True)], ids=["exit1", "sigkill", "exit1-in-train.sh"])
async def test_a_trainer_that_failed_while_its_worker_lingers_failed(end: str, words: str, wrap: bool, lab: Any, lab_config: Any,
                                                                    engines: Any, monkeypatch: Any) -> None:
    cfg, gate = _config(lab, lab_config, end, monkeypatch, wrap)
    eng = engines(cfg)
    try:
        res = await eng.attempt(f"trainer {end}, worker lingers")
        stage = res.verdict.failed_stage
        assert res.outcome is Outcome.FAILED and stage is not None, res.verdict.summary()
        assert stage.name.endswith("alive") and stage.layer.value == "process", res.verdict.summary()
        assert stage.detail.startswith(words) and "launcher" not in stage.detail, stage.detail
        assert "it started live" in stage.detail, stage.detail
        fate = await final_fate(cfg, res.attempt)
        assert (fate.state, fate.layer) == ("died", "process") and fate.cause.startswith(words), fate
        assert "not observed" not in fate.cause, fate
    finally:
        gate.touch()


# "train.sh, then a step": the script goes on for half a second after its trainer, so a reading sees
# it alive while the trainer's worker, reparented to PID 1, is out of its tree; that reading forgot
# the worker was the trainer's, and the script's exit 0 read as a launcher's
@pytest.mark.parametrize(("wrap", "left"), [(False, "pid"), (True, "sleep"), ("sleep 0.5; echo training done", "sleep")],
                         ids=["trainer", "train.sh", "train.sh, then a step"])
async def test_a_trainer_that_exited_0_is_finished_whatever_lingers(wrap: bool | str, left: str, lab: Any, lab_config: Any,
                                                                   engines: Any, monkeypatch: Any) -> None:
    # the worker writes a BrokenPipeError on its way out (after the gate); in a train.sh the trainer
    # runs in the foreground and the script's `sleep 60 &` monitor lives on: that read "running:
    # launcher exited 0; trainer pid N (sleep 60) continues" for the monitor's whole minute
    cfg, gate = _config(lab, lab_config, "exit0", monkeypatch, wrap=wrap)
    eng = engines(cfg)
    try:
        res = await eng.attempt("trainer exit 0, worker lingers")
        alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        assert alive.detail.startswith("finished: exited with code 0") and "launcher" not in alive.detail, alive.detail
        assert "it started live" in alive.detail and left in alive.detail, alive.detail
    finally:
        gate.touch()  # the worker writes its BrokenPipeError now, and goes
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("finished", None) and fate.cause.startswith("exited with code 0"), fate
    assert "not observed" not in fate.cause, fate


async def test_a_fresh_cockpit_reads_a_trainers_failure_while_its_worker_lingers(lab: Any, lab_config: Any, engines: Any) -> None:
    # the trainer dies (exit 1) after the attempt's cockpit is gone, its worker lingering: a fresh
    # cockpit (status, a new TUI) never saw the trainer alive, and read its status as a launcher's:
    # "running: launcher exited 1; trainer pid W (python3) continues" for as long as the worker lived
    ws = Path(lab.workspace(200))
    shutil.copy(JOBS / "linger_worker.py", ws / "linger_worker.py")
    gate = ws / "linger-gate-fresh"
    ends = Path(f"{gate}.end")
    gate.unlink(missing_ok=True)
    ends.unlink(missing_ok=True)
    cmd = shlex.join([lab.jobsim_argv()[0], str(ws / "linger_worker.py"), "exit1", str(gate)])
    cfg = lab_config(job={"command": cmd}, verify={"settle": 0.5})
    try:
        first = engines(cfg)
        res = await first.attempt("trainer runs", follow=False)
        assert res.outcome is Outcome.PASSED and res.job is not None, res.verdict.summary()
        await first.close()
        ends.touch()  # the trainer exits 1; its worker lingers until the gate
        exit_file = Path(res.job.exit_file)
        await await_for(lambda: exit_file.exists() and exit_file.read_text().strip() != "", 20, "the trainer's exit status")
        fate = await engines(cfg).reconcile()
        assert fate is not None and (fate.state, fate.layer) == ("died", "process"), fate
        assert fate.cause.startswith("exited with code 1") and "launcher" not in fate.cause, fate.cause
        assert "it started live" in fate.cause, fate.cause
    finally:
        gate.touch()
