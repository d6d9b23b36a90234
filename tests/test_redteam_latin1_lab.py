"""A crash whose traceback is not UTF-8 (a latin-1 console) is read as the crash it is.

A job with ``PYTHONIOENCODING=latin-1`` writes its traceback's non-ASCII letters as single bytes
(``Ü`` is ``\\xdc``), invalid UTF-8, after a line with NUL bytes in it.  The fate is its exception
(``died (app)``, ``FileNotFoundError`` with the path), not "no traceback in the log" nor a
``process`` death.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


async def test_a_latin1_traceback_is_read_as_the_crash(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "latin1_crash.py"), "env": {"PYTHONIOENCODING": "latin-1"}},
                     verify={"settle": 5.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("a latin-1 traceback")
    stage = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and stage is not None and stage.layer is Layer.APP, res.verdict.summary()
    assert "FileNotFoundError" in stage.detail, stage.detail
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and "FileNotFoundError" in fate.cause and "bungen/shard-7.bin" in fate.cause, fate
