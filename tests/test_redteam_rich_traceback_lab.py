"""A crash printed by ``rich`` (``rich.traceback.install()``, ``RichHandler(rich_tracebacks=True)``) is
the code's traceback, not a death "with no traceback in the log".

rich draws the traceback as a box: the header ``Traceback (most recent call last)`` sits in its top
border (no colon at the line's end), each frame is a ``│ path:N in func │`` line, and the exception
line follows the box.  cockpit found no traceback in it: the job's ``RuntimeError`` read ``failed
(process)``, "exited with code 1, with no traceback in the log; its last line: RuntimeError: …",
which sends the reader to look for a signal or a guard's exit in a job whose code raised.  It is
``app``, the exception named, as a plain traceback is.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome
from cockpit.core.probes.classifier import classify_lines
from cockpit.core.probes.tb_parts import unwound
from tests.lab.runs import final_fate, script_command

WORDS = "exited with code 1: RuntimeError: data shard shard-17 is missing from the index"

# a RichHandler record and its box, as rich 15 prints them into a file (indented under the record,
# each line padded to the console's width)
PAD = " " * 29
HANDLED = [
    "[12/04/26 21:53:57] INFO     step 1 loss 2.3" + " " * 49 + "train.py:7",
    " " * 20 + "ERROR    shard unreadable, skipping" + " " * 36 + "train.py:11",
    PAD + "╭──────────── Traceback (most recent call last) ─────────────╮         ",
    PAD + "│ /workspace/train.py:9 in <module>                          │         ",
    PAD + "│                                                            │         ",
    PAD + "│ ❱  9 │   load()                                            │         ",
    PAD + "│                                                            │         ",
    PAD + "│ /workspace/train.py:6 in load                              │         ",
    PAD + "│                                                            │         ",
    PAD + "│ ❱  6 def load(): raise KeyError(\"shard-17\")                │         ",
    PAD + "╰────────────────────────────────────────────────────────────╯         ",
    PAD + "KeyError: 'shard-17'                                                   ",
    " " * 20 + "INFO     step 2 loss 2.2" + " " * 49 + "train.py:12",
]


def test_a_rich_box_under_a_log_record_is_one_traceback_with_its_exception() -> None:
    c = classify_lines(HANDLED)
    assert [(m.kind, m.label) for m in c.matches] == [("python-traceback", "KeyError: 'shard-17'")], c.matches
    assert unwound(list(c.matches[0].traceback), PAD), c.matches[0].traceback  # caught at <module>, as a plain one reads


def test_a_box_that_is_no_traceback_opens_nothing() -> None:
    table = ["╭──────── Metrics ────────╮", "│ loss      2.31          │", "╰─────────────────────────╯", "KeyError: 'not after a traceback'"]
    assert not any(m.traceback for m in classify_lines(table).matches), classify_lines(table).matches


@pytest.mark.lab
async def test_a_crash_printed_by_rich_is_the_codes_error(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "rich_traceback.py")}, verify={"settle": 5.0, "fate_interval": 0.3})
    res = await engines(cfg).attempt("a rich traceback")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None and stage.name.endswith("alive"), res.verdict.summary()
    assert stage.layer is Layer.APP and stage.detail.startswith(WORDS) and "no traceback" not in stage.detail, stage.detail
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and fate.cause.startswith(WORDS), fate
