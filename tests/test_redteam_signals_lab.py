"""A job ended by a signal from outside is told as the process's end, in the job's own words.

* SIGINT (``kill -INT``, a launcher or an agent stopping its workers): Python unwinds the program
  with a ``KeyboardInterrupt`` traceback.  That traceback is not the training code failing: the
  verdict said ``failed (app)`` "KeyboardInterrupt"; it is ``process``, said as the signal's.
* SIGTERM: the shell prints ``Terminated``; the verdict and the fate quoted it as the job's last
  line ("its last line: Terminated") instead of the job's own last line.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


def _config(lab: Any, lab_config: Any, sig: str) -> Any:
    return lab_config(job={"command": script_command(lab, "signal_self.py", sig)}, verify={"settle": 5.0, "fate_interval": 0.3})


@pytest.mark.parametrize(("sig", "words"), [
    ("INT", "killed by signal 2 (SIGINT): KeyboardInterrupt (a signal unwound the code: no failure of its own)"),
    ("TERM", "killed by signal 15 (SIGTERM), with no traceback in the log; its last line: checkpoint saved at step 14"),
])
async def test_a_job_ended_by_a_signal_is_the_process_layer_in_its_own_words(sig: str, words: str, lab: Any, lab_config: Any,
                                                                              engines: Any) -> None:
    cfg = _config(lab, lab_config, sig)
    eng = engines(cfg)
    res = await eng.attempt(f"SIG{sig}")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None, res.verdict.summary()
    assert stage.layer is Layer.PROCESS and stage.detail.startswith(words), stage.detail
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "process") and fate.cause.startswith(words), fate
