"""A trainer's uncaught ``MemoryError`` is memory running out, at the container, not the code.

Under an address-space limit (``ulimit -v``), a cgroup's ``memory.max`` or a full host, Python's
allocator fails and raises a bare ``MemoryError`` (numpy: ``_ArrayMemoryError: Unable to allocate
…``).  The verdict read ``failed (app)``, "exited with code 1: MemoryError", as a bug in the code;
like ``Cannot allocate memory`` (ENOMEM) it is now the container's limits, named "out of memory".
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, held_gate, script_command

pytestmark = pytest.mark.lab

CAUSE = "out of memory (MemoryError)"


def _limited(lab: Any, gate: object) -> str:
    return "sh -c " + repr("ulimit -v 500000; exec " + script_command(lab, "r11_memory_error.py", gate))


async def test_a_memory_error_in_the_settle_window_fails_at_the_container(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": _limited(lab, "-"), "progress_pattern": r"step \d+"}, verify={"settle": 30.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("MemoryError while settling")
    assert res.outcome is Outcome.FAILED and res.verdict.layer == "container", res.verdict.summary()
    assert CAUSE in res.verdict.summary(), res.verdict.summary()
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "container") and CAUSE in fate.cause, fate


async def test_a_memory_error_after_the_verdict_died_at_the_container(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r11-memory-gate") as gate:  # touched at the end: the allocation
        cfg = lab_config(job={"command": _limited(lab, gate), "progress_pattern": r"step \d+"}, verify={"settle": 1.0, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("MemoryError after the verdict")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "container") and CAUSE in fate.cause, fate
