"""A log rotated under the job (renamed, a new empty file made: logrotate's ``create``) is read
where the job writes it.

The job writes on to its stdout, the renamed file; cockpit read the new empty file by its path:
verify ended ``pending`` ("log is empty") for a job that was stepping, the fate read ``stalled
(app)`` while it trained on, and its crash would have gone unseen.  The reader now follows the
supervisor's stdout when it is no longer the log's path, and the moved file once the supervisor is
gone, and says where the log went.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Outcome
from tests.lab.runs import final_fate, script_command

pytestmark = pytest.mark.lab


async def test_a_rotated_log_is_read_where_the_job_writes_it(lab: Any, lab_config: Any, engines: Any) -> None:
    gate = Path(lab.workspace(200)) / "rotate-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "rotate_log.py", gate)},
                     verify={"settle": 1.0, "stall_after": 5, "fate_interval": 0.3})
    eng = engines(cfg)
    try:
        res = await eng.attempt("log rotated under the job")
        assert res.outcome is Outcome.PASSED and res.job is not None, res.verdict.summary()
        alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
        assert f"its log was moved to {res.job.log_path}.1" in alive.detail, alive.detail
    finally:
        gate.touch()  # the job crashes now, into the moved file
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and "checkpoint shard 3 is corrupt" in fate.cause, fate


async def test_a_log_truncated_in_place_and_regrown_is_read_from_its_start(lab: Any, lab_config: Any, engines: Any) -> None:
    # logrotate's copytruncate: the same file, emptied, then written past the old offset before the
    # next read; the crash's traceback sits where the old bytes were
    gate = Path(lab.workspace(200)) / "copytruncate-gate"
    gate.unlink(missing_ok=True)
    cfg = lab_config(job={"command": script_command(lab, "copytruncate_log.py", gate), "progress_pattern": r"step \d+"},
                     verify={"settle": 1.0, "stall_after": 30, "fate_interval": 0.3})
    eng = engines(cfg)
    try:
        res = await eng.attempt("log truncated in place under the job")
        assert res.outcome is Outcome.PASSED and res.job is not None, res.verdict.summary()
        reader = eng.follower.reader if eng.follower is not None else None
        assert reader is not None and reader.offset > 0  # the follower read the 5 steps: its offset is past them
    finally:
        gate.touch()  # the rotation and the crash
    fate = await final_fate(cfg, res.attempt)
    assert (fate.state, fate.layer) == ("died", "app") and "checkpoint shard 3 is corrupt" in fate.cause, fate
    # read from the start either way: most often the truncation and the regrowth both land between
    # two reads (the overlap check finds the rewrite); under load a read can fall between the
    # job's truncate and its write (the log shorter than the offset).  Without either, the fate
    # above would lack the traceback: the reader would have gone on from its old offset.
    assert (reader.rewrites, reader.truncations) in ((1, 0), (0, 1)), (reader.rewrites, reader.truncations)
