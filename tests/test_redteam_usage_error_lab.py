"""A trainer that refuses its command line failed in its arguments, not in its process's lifecycle.

``python train.py --lr 1e-4 --lr-sched cosine`` against code whose parser has no ``--lr-sched``
(the option renamed, the command copied from another branch): argparse prints its usage line and
``train.py: error: unrecognized arguments: --lr-sched cosine``, and exits 2; click prints
``Error: No such option: --lr-sched``, exit 2.  cockpit said ``failed (process)``, "exited with
code 2, with no traceback in the log", the layer of a signal or a launcher.  It is the job's
command line against its code: ``app``, the refusal quoted, the advice to match [job] command to
the options the deployed code takes.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


@pytest.mark.parametrize(("parser", "words"), [
    ("argparse", "the command line was refused: unrecognized arguments: --lr-sched cosine"),
    ("click", "the command line was refused: No such option: --lr-sched Did you mean --lr?"),
])
async def test_a_refused_command_line_is_the_apps_arguments(parser: str, words: str, lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "refused_start.py", parser)}, verify={"settle": 0.5, "fate_interval": 0.3})
    res = await engines(cfg).attempt(f"{parser} refuses an option")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None and stage.name.endswith("alive"), res.verdict.summary()
    assert stage.layer is Layer.APP and stage.detail.startswith(f"exited with code 2: {words}"), stage.detail
    assert "[job] command" in stage.advice, stage.advice
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and fate.cause.startswith(f"exited with code 2: {words}"), fate
