"""One reading of the job never shows its exit status without the log bytes written before it.

The job-state probe (:func:`~cockpit.core.actions.jobstate.state_command`) read the log's size
first and the exit file last: a job that wrote its traceback and exited while the probe ran was
read with its status and without the traceback, and verify said "exited with code 1, with no
traceback in the log" (seen for a crash right after a ``\\r`` progress bar in the lab; the follower
then read the late bytes as a launcher's survivor's and said "its exit status was not observed").

The real probe runs here in a real ``sh`` on real files; the job's last moment is played, once,
by a ``date`` on the PATH ahead of the real one: it appends the traceback and writes the exit file
(as the job's death and its supervisor would) in the middle of the probe.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cockpit.core.actions.job import JobRecord
from cockpit.core.actions.jobstate import parse_state, state_command

TRACEBACK = b"Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\nRuntimeError: boom\n"


def test_a_reading_with_the_exit_status_holds_every_byte_written_before_it(tmp_path: Path) -> None:
    log, exit_file = tmp_path / "train.log", tmp_path / "train.log.exit"
    log.write_bytes(b"step 1 loss 2.0\n")
    (tmp_path / "train.log.pid").write_text("999999999\n")  # no such process: the supervisor is gone
    shim = tmp_path / "bin"
    shim.mkdir()
    fired = tmp_path / "fired"
    real_date = subprocess.run(["sh", "-c", "command -v date"], capture_output=True, text=True, check=True).stdout.strip()
    (shim / "date").write_text(
        "#!/bin/sh\n"
        f"if [ ! -e '{fired}' ]; then : > '{fired}'; printf '%s' '{TRACEBACK.decode()}' >> '{log}'; echo '1 999999999' > '{exit_file}'; fi\n"
        f"exec {real_date} \"$@\"\n")
    (shim / "date").chmod(0o755)
    job = JobRecord(attempt=1, pid=999999999, pgid=999999998, log_path=str(log), pid_file=str(tmp_path / "train.log.pid"),
                    exit_file=str(exit_file))
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"}
    offset, seen = 0, b""
    for _ in range(2):
        out = subprocess.run(["sh", "-c", state_command(job, offset)], capture_output=True, env=env, check=True).stdout
        st = parse_state(out, job)
        assert st.parsed, out
        data = st.data[: max(0, st.log_size - offset)]
        seen += data
        offset += len(data)
        if st.exit_code is not None:
            assert TRACEBACK in seen, (st.exit_code, seen)
    assert fired.exists() and st.exit_code == 1 and TRACEBACK in seen
