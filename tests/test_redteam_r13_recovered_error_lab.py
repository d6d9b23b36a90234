"""A job that recovered from one error and later died of another died of the later one.

A data pipeline's retry loop catches a failed shard fetch (``ConnectionResetError``), prints its
traceback (``traceback.print_exc()``) and retries; training goes on for many steps.  Later the
job dies of an uncaught ``ValueError`` (a shape bug), exit 1.  cockpit's fate said ``died (app)
… exited with code 1: ConnectionResetError: [Errno 104] Connection reset by peer (+1 more
error)``: the error the job survived, named as what it died of, and the real cause hidden behind
"+1 more error".  Progress after an error says that error was not the death: the cause is the
``ValueError`` (the error the job's last lines hold), for the cockpit that watched the job and for
a later one (``cockpit status``) alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import final_fate, fresh_fate, held_gate, script_command

pytestmark = pytest.mark.lab

DEATH = "ValueError: Target size"
SURVIVED = "ConnectionResetError"


def _steps_after_retry(log: Path, n: int) -> bool:
    text = log.read_text(errors="replace") if log.exists() else ""
    _, sep, after = text.partition("shard fetch failed, retrying")
    return bool(sep) and after.count("\nstep ") >= n


async def test_the_error_a_job_recovered_from_is_not_what_it_died_of(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r13-recovered-gate") as gate:
        cfg = lab_config(job={"command": script_command(lab, "r13_recovered_then_crash.py", gate), "progress_pattern": r"^step \d+"},
                         verify={"settle": 0.3, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("a retried shard, then a shape bug")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        log = Path(eng.job.log_path)
        gate.touch()  # one fetch fails, is printed and retried; training goes on
        await await_for(lambda: _steps_after_retry(log, 10), 15, "ten steps after the retried fetch")
        Path(f"{gate}.crash").touch()  # the real crash
        fate = await final_fate(cfg, res.attempt)
        Path(f"{gate}.crash").unlink(missing_ok=True)
    assert (fate.state, fate.layer) == ("died", "app"), fate
    assert DEATH in fate.cause, f"the job died of its ValueError, after training on past the retried fetch: {fate.cause}"
    assert SURVIVED not in fate.cause.split(DEATH)[0], f"the error the job recovered from is named first: {fate.cause}"
    later = await fresh_fate(cfg)  # cockpit status: the same death
    assert later is not None and DEATH in later.cause and SURVIVED not in later.cause.split(DEATH)[0], later
