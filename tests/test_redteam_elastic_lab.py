"""A worker that crashed under an agent that restarts it is not the job's training loop dying.

torchrun's elastic agent (``--max-restarts``), a trainer that runs a subprocess: a child process of
the job prints an uncaught traceback and exits, and the job's main process lives on to restart it.
cockpit read the traceback as the main process's own loop death: ``died (gpu)``, "the process is
still alive, with no other thread (its main thread has not finished shutting down): it will not
exit by itself; stop it", final, while the agent started the worker again and training went on.
A traceback is the held process's loop death only when no process of the job ended with it; in a
settle window the same crash fails the attempt for its error (``failed (gpu)`` at ``settled``), never
as a held loop.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.jobstate import JobReader, JobState
from cockpit.core.actions.loopdeath import LOOP_CONFIRM_S
from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, final_fate, script_command

pytestmark = pytest.mark.lab


async def test_a_worker_restarted_by_its_agent_is_not_the_jobs_death(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "elastic-gate"
    for p in (gate, Path(f"{gate}.restart"), Path(f"{gate}.end")):
        p.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "elastic_agent.py", gate)}, verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("elastic restart")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log = Path(eng.job.log_path)
    gate.touch()
    await await_for(lambda: "Worker group FAILED" in log.read_text(), 10, "the worker's crash")
    seen = time.monotonic()
    follower = eng.follower
    assert follower is not None
    # past the loop-death confirmation window (LOOP_CONFIRM_S) from the crash: a reading that judged it
    await await_for(lambda: follower.checked_at > seen + LOOP_CONFIRM_S + 1.0 or (f := fate_of(cfg, res.attempt)) is not None and f.final,
                    15, "a reading past the confirmation window")
    fate = fate_of(cfg, res.attempt)
    assert fate is not None and fate.state == "running", fate
    Path(f"{gate}.restart").touch()
    Path(f"{gate}.end").touch()
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "finished" and fate.cause.startswith("exited with code 0; 1 error in the log"), fate


async def test_a_worker_crash_in_the_settle_window_fails_for_its_error_not_as_a_held_loop(lab: Any, lab_config: Any, engines: Any,
                                                                                         monkeypatch: Any) -> None:
    gate = Path(lab.workspace(200)) / "elastic-gate-settle"
    for p in (gate, Path(f"{gate}.restart"), Path(f"{gate}.end")):
        p.unlink(missing_ok=True)
    real = JobReader.read

    async def read(reader: JobReader) -> JobState:  # the worker crashes once verify has read it alive with progress
        st = await real(reader)
        if st.alive and reader.scan.progress_count > 3:
            gate.touch()
        return st

    monkeypatch.setattr(JobReader, "read", read)
    cfg = lab_config(job={"command": script_command(lab, "elastic_agent.py", gate)}, verify={"settle": 6.0})
    eng = engines(cfg)
    try:
        res = await eng.attempt("elastic restart in the settle window")
    finally:
        Path(f"{gate}.restart").touch()
        Path(f"{gate}.end").touch()
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None, res.verdict.summary()
    assert stage.name.endswith("settled") and stage.layer.value == "gpu", res.verdict.summary()
    assert stage.detail.startswith("CUDA illegal memory access") and "will not exit by itself" not in stage.detail, stage.detail
