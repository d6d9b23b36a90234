"""A job that trains while no log line matches ``[job] progress_pattern``: when the log itself shows
the step moving (``iter 120 loss 2.3``), the pattern is what is wrong: ``config``, and the fix was
never judged (``untested``), not a code failure; when the progress goes to another file, verify
cannot tell a hang from that, so it stays ``app`` and says where to look."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cockpit.core.config import Config
from cockpit.core.layers import Layer, Outcome
from tests.lab.runs import script_command


def _cfg(lab: Any, lab_config: Callable[..., Config], mode: str) -> Config:
    return lab_config(job={"command": script_command(lab, "other_progress.py", "--mode", mode), "progress_pattern": r"^step \d+",
                           "startup_timeout": 3}, verify={"settle": 0.5})


async def test_steps_the_pattern_misses_are_the_configs_failure(lab: Any, lab_config: Callable[..., Config], engines: Any) -> None:
    eng = engines(_cfg(lab, lab_config, "iter"))
    res = await eng.attempt("iter lines")
    fs = res.verdict.failed_stage
    assert fs is not None and fs.name == "verify: progress" and fs.layer is Layer.CONFIG, res.verdict.summary()
    assert "the log shows the job stepping" in fs.detail and "/^step \\d+/" in fs.detail and "iter " in fs.detail, fs.detail
    assert "progress_pattern" in (fs.advice or "")
    assert res.outcome is Outcome.UNTESTED  # the code was never judged: not a failed fix


async def test_progress_in_another_file_stays_app_and_says_where_to_look(lab: Any, lab_config: Callable[..., Config], engines: Any) -> None:
    eng = engines(_cfg(lab, lab_config, "file"))
    res = await eng.attempt("progress elsewhere")
    fs = res.verdict.failed_stage
    assert fs is not None and fs.name == "verify: progress" and fs.layer is Layer.APP, res.verdict.summary()
    assert "2 log lines, none matching /^step \\d+/" in fs.detail, fs.detail
    assert "[job] log" in (fs.advice or "") and "progress_pattern" in (fs.advice or ""), fs.advice
