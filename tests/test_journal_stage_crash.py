"""A stage is written without fsync (only the durable records are): a cockpit killed with SIGKILL
right after writing stages leaves them in the journal, read back whole by the next cockpit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cockpit.core.journal import Journal
from cockpit.core.outcome import Outcome
from tests.lab import wait_for
from tests.test_journal import child_env, file_has

CHILD = textwrap.dedent(
    """
    import sys, time
    from cockpit.core.journal import Journal
    from cockpit.core.layers import Layer, Stage, Status

    j = Journal(sys.argv[1])
    a = j.start_attempt("stages then kill", "pve-200")
    for i in range(40):
        j.record_stage(a, "connect", Stage(f"stage {i}", Status.OK, Layer.SSH, "x" * 200))
    j.record_stage(a, "verify", Stage("progress", Status.OK, Layer.APP, "child_stages_done"))
    time.sleep(300)  # mid-attempt, until killed: nothing durable was written after the stages
    """
)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_stages_written_without_fsync_survive_a_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], env=child_env())
    try:
        wait_for(file_has(path, "child_stages_done"), 20, "the child to write its stages")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        j = Journal(path)
        assert j.bad_lines == 0
        (rec,) = j.recover()
        assert rec.outcome is Outcome.INTERRUPTED
        assert [s.stage.name for s in rec.stages] == [f"stage {i}" for i in range(40)] + ["progress"]
        assert "last stage seen: verify/progress (ok)" in rec.summary
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
