"""A job that exits 0 long before the total its progress lines announce (``step 40/1000``) is
``finished``, as its exit code says, but its fate says where it ended: "finished" must not read as
"trained to the end".  The control runs all 1000 steps and says nothing of the kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cockpit.core.config import Config
from tests.lab import await_for
from tests.lab.runs import fate_of, script_command


@pytest.mark.parametrize("how", ["caught", "exit"])
async def test_exit_0_short_of_the_announced_total_says_where_it_ended(how: str, lab: Any, lab_config: Callable[..., Config],
                                                                         engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "early_exit.py", "--how", how), "progress_pattern": r"^step "},
                     verify={"settle": 0.5})
    eng = engines(cfg)
    res = await eng.attempt(f"early exit ({how})")
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.final, 30, "the job's final fate")
    fate = fate_of(cfg, res.attempt)
    assert fate.state == "finished" and fate.layer is None, fate
    assert "exited with code 0 at step 40 of 1000, before the end its progress lines announce" in fate.cause, fate.cause
    if how == "caught":  # the error the code swallowed is named beside it
        assert "CUDA illegal memory access" in fate.cause, fate.cause


async def test_a_run_to_its_total_is_finished_without_a_note(lab: Any, lab_config: Callable[..., Config], engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "early_exit.py", "--how", "full", "--interval", 0.002),
                          "progress_pattern": r"^step "}, verify={"settle": 0.5})
    eng = engines(cfg)
    res = await eng.attempt("full run")
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.final, 60, "the job's final fate")
    fate = fate_of(cfg, res.attempt)
    assert fate.state == "finished" and fate.cause.startswith("exited with code 0"), fate
    assert "before the end" not in fate.cause, fate.cause
