"""A trainer that catches its own crash, prints it on one line and exits 0 is not a clean finish.

``except Exception as e: print(f"training failed: {e!r}"); sys.exit(0)``: no traceback, no error
signature, exit 0 after progress.  The verdict said "finished cleanly: … no error in the log" and
the fate "finished: exited with code 0", the failure nowhere.  Exit 0 stays the job's word that it
finished (``passed``, ``finished``), and both now quote its last line, which says it failed.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, held_gate, script_command

pytestmark = pytest.mark.lab

SAID = "its last line: training failed: RuntimeError('checkpoint shard 3 is corrupt')"


async def _final(cfg: Any, attempt: int) -> Any:
    await await_for(lambda: (f := fate_of(cfg, attempt)) is not None and f.final, 20, "the final fate")
    return fate_of(cfg, attempt)


async def test_a_caught_crash_said_on_one_line_before_exit_0_is_named_in_the_verdict(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r10_caught_exit0.py", "-", "print"), "progress_pattern": r"step \d+"},
                     verify={"settle": 30.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("caught crash, exit 0, while settling")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    settled = next(s for s in res.verdict.stages if s.name.endswith("settled"))
    assert "cleanly" not in settled.detail and SAID in settled.detail, settled.detail
    fate = await _final(cfg, res.attempt)
    assert fate.state == "finished" and fate.cause == f"exited with code 0; {SAID}", fate


async def test_a_caught_crash_said_on_one_line_after_the_verdict_is_named_in_the_fate(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r10-caught-gate") as gate:
        cfg = lab_config(job={"command": script_command(lab, "r10_caught_exit0.py", gate, "print")},
                         verify={"settle": 1.0, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("caught crash, exit 0, after the verdict")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
    fate = await _final(cfg, res.attempt)
    assert fate.state == "finished" and fate.cause == f"exited with code 0; {SAID}", fate
