"""A trainer stopped mid-run (``kill -STOP``, a debugger, Ctrl-Z) is not healthy, and says so.

``python3 stop_self.py GATE``: ten steps, then SIGSTOP to itself (state ``T``).  A stopped process
makes no progress until SIGCONT, and nothing in its code waits: with the default ``stall_after``
(at least 120 s) verify's settle window ended on it and the attempt ``passed`` ("alive, 10
progress lines and no error"), and its fate read ``running`` for two minutes, then "stalled"
with no more than the state letter as a hint.  A main process stopped for two seconds fails
``alive`` at ``process``, and its fate is ``stalled (process)`` at once, both saying it is stopped
and that only SIGCONT resumes it; it reads ``running`` again once continued.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.fate import read_fate
from cockpit.core.layers import Layer, Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, script_command

pytestmark = pytest.mark.lab

WORDS = "stopped by a signal (SIGSTOP, SIGTSTP, Ctrl-Z) (state T): it resumes only with SIGCONT"


async def test_a_stopped_trainer_fails_alive_and_its_fate_is_stalled_process(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "stop-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "stop_self.py", gate)}, verify={"settle": 3.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("SIGSTOPped mid-run")
    assert res.job is not None and res.job.main_pid is not None
    try:
        stage = res.verdict.failed_stage
        assert res.outcome is Outcome.FAILED and stage is not None and stage.name.endswith("alive"), res.verdict.summary()
        assert stage.layer is Layer.PROCESS and WORDS in stage.detail, stage.detail
        await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled", 20, "the stalled fate")
        fate = fate_of(cfg, res.attempt)
        assert fate.layer == "process" and WORDS in fate.cause, fate
        status = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)  # as `cockpit status` reads it
        assert (status.state, status.layer) == ("stalled", "process") and WORDS in status.cause, status
    finally:
        lab.exec_in(200, f"kill -CONT {int(res.job.main_pid)}")
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "running", 20, "running again once continued")
    gate.touch()


async def test_stop_ends_a_stopped_trainer_with_term_not_kill(lab: Any, lab_config: Any, engines: Any) -> None:
    # TERM stays pending on a stopped process: stop sat out the whole stop_timeout and KILLed it
    # ("stopped with KILL after 10s of TERM"), and the trainer never had its chance to act on TERM
    gate = Path(lab.workspace(200)) / "stop-gate-term"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "stop_self.py", gate), "stop_timeout": 10.0}, verify={"settle": 0.5})
    eng = engines(cfg)
    try:
        res = await eng.attempt("SIGSTOPped mid-run", follow=False)
        assert res.job is not None, res.verdict.summary()
        log = Path(res.job.log_path)
        await await_for(lambda: "step 9" in log.read_text(), 20, "the trainer's stop at step 9")
        v = await asyncio.wait_for(eng.run_action("stop"), 8)  # well inside stop_timeout
        term = next(s for s in v.stages if s.name.endswith("terminate"))
        assert v.ok and term.detail.startswith("stopped with TERM"), v.summary()
    finally:
        gate.touch()
