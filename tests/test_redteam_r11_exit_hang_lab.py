"""A trainer that reaches its end and then hangs at interpreter exit is held at exit, not stalled in training.

``print("training finished")`` and the main thread returns, while a non-daemon thread it started
waits on ``queue.Queue().get()`` (Python's shutdown joins it) or a ``multiprocessing`` child waits
the same way (the atexit handler joins it): the process never exits.  The fate read ``stalled
(app)``: "every GPU idle (0%): a Python-side wait (a lock, a collective, a dataloader)", as if the
loop were stuck mid-training.  The stall now says the job's last line said training ended and that
something holds the process at exit.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, script_command

pytestmark = pytest.mark.lab

HELD = ("its last line says training ended (training finished), and it has not exited: something holds it at exit "
        "(a non-daemon thread, a child process never joined, an atexit handler)")


@pytest.mark.parametrize("how", ["thread", "mp"])
async def test_a_trainer_held_at_exit_after_the_verdict_is_said_held_at_exit(lab: Any, lab_config: Any, engines: Any, how: str) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r11_exit_hang.py", 20, how), "progress_pattern": r"step \d+"},
                     verify={"settle": 0.5, "fate_interval": 0.3, "stall_after": 2})
    eng = engines(cfg)
    res = await eng.attempt(f"held at exit by a {how}")
    try:
        assert res.outcome is not Outcome.UNTESTED, res.verdict.summary()
        await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled" and "training ended" in f.cause,
                        20, "a stall after the last line")
        fate = fate_of(cfg, res.attempt)
        assert fate.layer == "app" and HELD in fate.cause and "Python-side wait" not in fate.cause, fate
    finally:
        await eng.run_action("stop")


async def test_a_trainer_held_at_exit_in_the_settle_window_fails_for_it(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r11_exit_hang.py", 10, "thread"), "progress_pattern": r"step \d+"},
                     verify={"settle": 30.0, "fate_interval": 0.3, "stall_after": 2})
    eng = engines(cfg)
    try:
        res = await eng.attempt("held at exit while settling")
        assert res.outcome is Outcome.FAILED and res.verdict.layer == "app", res.verdict.summary()
        settled = next(s for s in res.verdict.stages if s.name.endswith("settled"))
        assert settled.detail.startswith("stalled: ") and HELD in settled.detail, settled.detail
    finally:
        await eng.run_action("stop")
