"""A crash under a progress bar that never ended its line is seen, and the bar is its last progress.

A trainer's tqdm bar on stderr redraws with ``\\r`` and no newline; an exception inside ``for b in
tqdm(loader)`` prints its traceback on the bar's unfinished line (``…it/s, loss=0.050]Traceback
(most recent call last):``).  The crash was seen (``failed (app)``, ``died (app)`` with its
exception), but the last progress line every verdict and fate quoted ended in ``Traceback (most
recent call last):``: such a segment is now cut where the header begins.  A bar that redraws
healthily through the whole settle window passes.
"""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, held_gate, script_command

pytestmark = pytest.mark.lab

ERROR = "ValueError: Expected input batch_size (32) to match target batch_size (16)."


def _is_bar(line: str | None) -> bool:
    return line is not None and line.rstrip().endswith("]") and "it/s, loss=" in line and "Traceback" not in line


async def test_a_crash_under_a_bar_in_the_settle_window_fails_with_the_bar_its_last_progress(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "r11_bar_crash.py", "-", "raise"), "progress_pattern": r"it/s"},
                     verify={"settle": 30.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("a crash under a bar while settling")
    assert res.outcome is Outcome.FAILED and res.verdict.layer == "app", res.verdict.summary()
    assert ERROR in res.verdict.summary() and "Traceback" not in res.verdict.summary(), res.verdict.summary()
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and ERROR in fate.cause and _is_bar(fate.last_progress), fate


async def test_a_crash_under_a_bar_after_the_verdict_died_with_the_bar_its_last_progress(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r11-bar-gate") as gate:  # touched at the end: the crash
        cfg = lab_config(job={"command": script_command(lab, "r11_bar_crash.py", gate, "raise"), "progress_pattern": r"it/s"},
                         verify={"settle": 1.0, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("a crash under a bar after the verdict")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and ERROR in fate.cause and _is_bar(fate.last_progress), fate


async def test_a_bar_that_redraws_through_the_settle_window_passes(lab: Any, lab_config: Any, engines: Any) -> None:
    with held_gate(lab, "r11-bar-ok-gate") as gate:  # touched at the end: the bar closes with its newline, exit 0
        cfg = lab_config(job={"command": script_command(lab, "r11_bar_crash.py", gate, "until"), "progress_pattern": r"it/s"},
                         verify={"settle": 2.0, "fate_interval": 0.3})
        eng = engines(cfg)
        res = await eng.attempt("a bar through the settle window")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        settled = next(s for s in res.verdict.stages if s.name.endswith("settled"))
        assert "no error" in settled.detail, settled.detail
    fate = await final_fate(cfg, res.attempt)
    assert fate.state == "finished" and _is_bar(fate.last_progress), fate
