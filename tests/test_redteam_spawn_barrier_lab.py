"""A spawned rank that crashed while the other waits in a barrier: the job hangs, and says so.

``torch.multiprocessing.spawn``-style jobs (and plain ``multiprocessing`` ones) whose rank 1
raises leave rank 0 in the next collective and the parent in its ``join``: the processes live, the
training is over.  The traceback (``Process SpawnProcess-2:``, ``_bootstrap`` outermost) is a
worker's that ended with it, no held loop; the job must read ``stalled`` once it has been silent
past ``stall_after``, to the cockpit that watched it and to a later one, never ``running`` nor
``finished``; and its cause names the rank's crash (the log's last error), not only "a Python-side
wait".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, fresh_fate, script_command

pytestmark = pytest.mark.lab


async def test_a_crashed_rank_with_the_other_in_a_barrier_is_a_stall(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "spawn-barrier-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "spawn_barrier.py", gate), "progress_pattern": r"step \d+"}, verify={"settle": 1.0, "fate_interval": 0.3, "stall_after": 3})
    eng = engines(cfg)
    res = await eng.attempt("a rank crashes, the other waits")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    gate.touch()
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state != "running", 30, "a fate other than running")
    fate = fate_of(cfg, res.attempt)
    assert fate.state == "stalled" and "CUDA out of memory" in fate.cause, fate
    later = await fresh_fate(cfg)
    assert later is not None and later.state == "stalled" and "CUDA out of memory" in later.cause, later
