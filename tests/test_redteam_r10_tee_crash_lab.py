"""A trainer piped into ``tee`` that dies of an uncaught exception died, whatever ``tee`` exits.

``command = "python3 -u train.py 2>&1 | tee -a train.log"``: the shell's status is ``tee``'s, 0, when
the trainer crashed with a traceback.  The fate read ``finished``, "exited with code 0 … 1 error in
the log", and a crash in the settle window failed verify with "exited with code 0: RuntimeError …".
A traceback that ended the log (nothing went on after it) under a pipeline's exit 0 is the
trainer's death: ``died (app)``, naming the exception and whose status the 0 is.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, held_gate, script_command

pytestmark = pytest.mark.lab

ERROR = "RuntimeError: checkpoint shard 3 is corrupt: unexpected EOF"
WHOSE = "its pipeline exited 0, the status of its last command (tee -a /dev/null): the trainer's own is not observed"


async def _final(cfg: Any, attempt: int) -> Any:
    await await_for(lambda: (f := fate_of(cfg, attempt)) is not None and f.final, 20, "the final fate")
    return fate_of(cfg, attempt)


async def test_a_trainer_that_crashes_into_tee_after_the_verdict_died(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r10-tee-gate") as gate:  # touched at the end: the crash
        cfg = lab_config(job={"command": script_command(lab, "r10_tee_crash.py", gate) + " 2>&1 | tee -a /dev/null"},
                         verify={"settle": 1.0, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("trainer crashes into tee")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
    fate = await _final(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app"), fate
    assert WHOSE in fate.cause and ERROR in fate.cause, fate


async def test_a_trainer_that_crashes_into_tee_in_the_settle_window_fails_for_its_error(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r10_tee_crash.py", "-") + " 2>&1 | tee -a /dev/null"},
                     verify={"settle": 30.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("trainer crashes into tee while settling")
    assert res.outcome is Outcome.FAILED and res.verdict.layer == "app", res.verdict.summary()
    alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
    assert alive.detail.startswith(WHOSE) and ERROR in alive.detail, alive.detail
    fate = await _final(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and ERROR in fate.cause, fate


async def test_a_trainer_that_ends_well_into_tee_finished(lab: Any, lab_config: Any, engines: Any) -> None:
    # the other side: a pipeline whose log ends with no traceback is still finished, its status said to be tee's
    cfg = lab_config(job={"command": script_command(lab, "r10_tee_crash.py", "-", "ok") + " 2>&1 | tee -a /dev/null"},
                     verify={"settle": 30.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("trainer ends well into tee")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    fate = await _final(cfg, res.attempt)
    assert fate.state == "finished" and "its status is its pipeline's last command's (tee -a /dev/null)" in fate.cause, fate
