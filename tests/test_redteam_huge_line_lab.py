"""A crash after a burst of more than 2 MiB is read to its end: its traceback is the cause.

``python3 huge_line.py``: five steps, one 10 MB line without a newline (a tensor printed whole, a
progress bar gone wrong), a line of invalid UTF-8 and NUL bytes, then an uncaught ``ValueError``.
The job reader reads the log in 1 MiB chunks, asking for the 64 bytes before its offset again to
tell a rewritten log from a grown one; the chunk's length was compared with 1 MiB *after* those 64
bytes were taken off, so every reading stopped after two chunks.  The verdict, the fate and
``cockpit status`` judged the death on the log's first 2 MiB: ``died (process)``, "exited with
code 1, with no traceback in the log; its last line: xxxx…".  It is the code's ``ValueError``
(``app``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cockpit.core.fate import read_fate
from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab

WORDS = "exited with code 1: ValueError: bad shard header in data-00042.bin"


async def test_a_traceback_after_a_10_mb_line_is_the_cause(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "huge_line.py")}, verify={"settle": 5.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("10 MB line, then a crash")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None and stage.name.endswith("alive"), res.verdict.summary()
    assert stage.layer is Layer.APP and stage.detail.startswith(WORDS), stage.detail
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and fate.cause.startswith(WORDS), fate
    assert res.job is not None
    status = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)  # as `cockpit status` reads it
    assert (status.state, status.layer) == ("died", "app") and status.cause.startswith(WORDS), status
