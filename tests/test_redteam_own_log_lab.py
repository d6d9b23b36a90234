"""A trainer that logs to a file of its own is told where its output goes.

``logging.FileHandler("run/train.log")``: the job trains, its steps written to its own file, and
the configured log holds one banner line (or nothing).  cockpit said "alive but no progress marker
within startup_timeout (1 log lines, none matching …)", or "the log stayed empty", and nothing of
the file the job was writing all along.  The job's processes' descriptors open for writing are read
when those stages fail: the file is named, with the setting that reads it ([job] log with
capture_output = false).  The layers stay as they were (the attempt could not be judged from the
log cockpit reads).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Layer
from tests.lab.runs import script_command

pytestmark = pytest.mark.lab


@pytest.mark.parametrize(("mode", "stage", "layer", "words"), [
    ("banner", "progress", Layer.APP, "alive but no progress marker within startup_timeout"),
    ("quiet", "log growing", Layer.PROCESS, "the log stayed empty for"),
])
async def test_a_job_logging_to_its_own_file_is_told_where(mode: str, stage: str, layer: Layer, words: str, lab: Any, lab_config: Any,
                                                           engines: Any) -> None:
    own = Path(lab.workspace(200)) / f"own-{mode}.log"
    own.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "own_log.py", own, mode), "startup_timeout": 2},
                     verify={"settle": 0.5, "fate_interval": 0.3})
    res = await engines(cfg).attempt(f"logs to its own file ({mode})")
    failed = res.verdict.failed_stage
    assert failed is not None and failed.name.endswith(stage) and failed.layer is layer, res.verdict.summary()
    assert failed.detail.startswith(words) and f"it holds {own} open for writing" in failed.detail, failed.detail
    assert "capture_output = false" in failed.detail and "train-" not in failed.detail.split("it holds")[1], failed.detail
