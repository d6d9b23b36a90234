"""A trainer that closes its output, or renames itself, mid-run.

Closed: ``os.close(1); os.close(2)`` and it trains on, its progress going to a file of its own
(which takes fd 1).  The
log stops while the process lives: the fate is ``stalled``, and it said "every GPU idle (0%): a
Python-side wait (a lock, a collective, a dataloader)".  Its output fds have no link any more:
that is said, as for output sent to /dev/null (tests/test_redteam_stdout_away_lab.py).

Renamed: ``pt_main_thread`` written to ``/proc/self/comm`` (PyTorch names its main thread so) is
the same main process: running while it trains on under its new name, ``died (app)`` when it raises.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, final_fate, held_gate, script_command

pytestmark = pytest.mark.lab

#: the file it opens next takes the lowest free fd, 1: its stdout is that file, its stderr closed
WORDS = "the main process no longer writes its log: its stdout is {} and its stderr closed now"


async def test_a_trainer_that_closed_its_output_is_said_so_not_hung(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r10-closed-gate") as gate:
        words = WORDS.format(f"{gate}.progress")
        cfg = lab_config(job={"command": script_command(lab, "r10_self_rename.py", gate, "close")},
                         verify={"settle": 0.5, "stall_after": 1.5, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("stdout and stderr closed mid-run")
        if res.outcome is Outcome.PASSED:  # the verdict came before the close: the fate says it
            await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled", 20, "the stalled fate")
            fate = fate_of(cfg, res.attempt)
            assert fate.layer == "app" and words in fate.cause and "wait" not in fate.cause, fate
        else:
            stage = res.verdict.failed_stage
            assert stage is not None and stage.name.endswith("settled") and words in stage.detail, res.verdict.summary()
        assert Path(f"{gate}.progress").read_text().count("step ") > 0  # it trained on


async def test_a_trainer_that_renamed_itself_is_followed_under_its_new_name(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r10-rename-gate") as gate:  # touched at the end: it raises
        cfg = lab_config(job={"command": script_command(lab, "r10_self_rename.py", gate, "comm")},
                         verify={"settle": 1.0, "stall_after": 30, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("renamed itself pt_main_thread")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        follower = eng.follower
        assert follower is not None
        await await_for(lambda: follower.checked is not None and "pt_main_thread" in follower.checked.cause, 10, "a reading under its new name")
        assert follower.checked.state == "running", follower.checked
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and "RuntimeError: checkpoint shard 3 is corrupt" in fate.cause, fate
