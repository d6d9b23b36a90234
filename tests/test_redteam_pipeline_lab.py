"""A pipeline's exit status is its last command's: the verdict and the fate say whose it is.

``command = "python3 guard_exit.py 2>&1 | tee -a run.log"``: the trainer's guard exits 1, the shell's
status is ``tee``'s, 0.  cockpit cannot know the trainer's status (the supervisor's shell has no
``pipefail``), so "passed", "finished: exited with code 0" read as the trainer's own word that it
finished.  The verdict and the fate now say the status is the pipeline's last command's and that
the trainer's own was not observed.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab

WORDS = "its status is its pipeline's last command's (tee -a /dev/null): the trainer's own is not observed (set -o pipefail)"


async def test_the_status_of_a_pipeline_is_said_to_be_its_last_commands(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "guard_exit.py") + " 2>&1 | tee -a /dev/null"},
                     verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("trainer exits 1 into tee")
    alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
    assert alive.detail.startswith("finished: exited with code 0") and WORDS in alive.detail, alive.detail
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "finished" and WORDS in fate.cause, fate
