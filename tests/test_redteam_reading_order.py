"""One reading of the job never shows its exit status without the log bytes written before it.

The job-state probe (:func:`~cockpit.core.actions.jobstate.state_command`) read the log's size
first and the exit file last: a job that wrote its traceback and exited while the probe ran was
read with its status and without the traceback, and verify said "exited with code 1, with no
traceback in the log" (seen for a crash right after a ``\\r`` progress bar in the lab; the follower
then read the late bytes as a launcher's survivor's and said "its exit status was not observed").

The real probe runs here in a real ``sh`` on real files; the job's last moment is played, once,
by a ``date`` on the PATH ahead of the real one: it appends the traceback and writes the exit file
(as the job's death and its supervisor would) in the middle of the probe.  Nor does a reading lose
the job's processes when the supervisor writes the status and goes while the probe walks its tree
(a ``cat`` on the PATH kills it there): a trainer's lingering worker read as nothing left.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cockpit.core.actions.job import JobRecord
from cockpit.core.actions.jobstate import parse_state, state_command
from cockpit.core.actions.survivors import group_command, needs_group
from cockpit.core.procstat import read_stat
from tests.lab.util import wait_for

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


def test_a_supervisor_that_goes_during_the_reading_leaves_the_group_to_read(tmp_path: Path) -> None:
    # the probe looked at /proc/$p, then walked its tree and read its stat: a supervisor that wrote
    # the exit status and went in between left a reading with neither its tree nor the job's group,
    # and a trainer's lingering worker went unseen ("finished: exited with code 0", nothing named).
    # Here the supervisor is a real session leader with a worker in its group; a `cat` on the PATH
    # ahead of the real one kills it at the tree walk's first read and writes its exit status.
    pid_file, exit_file, fired, reaped = (tmp_path / n for n in ("train.log.pid", "train.log.exit", "fired", "reaped"))
    sup = subprocess.Popen(["sh", "-c", f"sleep 60 & echo $! > '{tmp_path / 'worker'}'; wait"], start_new_session=True)
    worker: int | None = None
    probe: subprocess.Popen[bytes] | None = None
    try:
        wait_for(lambda: (tmp_path / "worker").exists() and (tmp_path / "worker").read_text().strip(), 5, "the worker's pid")
        worker = int((tmp_path / "worker").read_text())
        pid_file.write_text(f"{sup.pid}\n")
        start = read_stat(Path(f"/proc/{sup.pid}/stat").read_text())
        assert start is not None
        shim = tmp_path / "bin"
        shim.mkdir()
        real_cat = subprocess.run(["sh", "-c", "command -v cat"], capture_output=True, text=True, check=True).stdout.strip()
        (shim / "cat").write_text(
            "#!/bin/sh\n"
            f"case \"$*\" in */task/*) if [ ! -e '{fired}' ]; then kill -9 {sup.pid}; echo '0 {sup.pid}' > '{exit_file}'; : > '{fired}'; "
            f"read -r _ < '{reaped}'; fi;; esac\n"
            f"exec {real_cat} \"$@\"\n")
        (shim / "cat").chmod(0o755)
        os.mkfifo(reaped)  # the shim waits on it until the test has reaped the supervisor
        job = JobRecord(attempt=1, pid=sup.pid, pgid=sup.pid, start_time=start.start_time, log_path=str(tmp_path / "train.log"),
                        pid_file=str(pid_file), exit_file=str(exit_file))
        env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"}
        probe = subprocess.Popen(["sh", "-c", state_command(job, 0)], stdout=subprocess.PIPE, env=env)
        wait_for(fired.exists, 5, "the supervisor killed in the middle of the reading")
        sup.wait(timeout=5)  # reaped: gone from /proc, as under a reaping init
        with open(reaped, "w") as w:
            w.write("go\n")
        out, _ = probe.communicate(timeout=10)
        st = parse_state(out, job)
        assert st.parsed and st.exit_code == 0, out
        # either the worker is in the reading, or the reading shows its supervisor, so the group is read next
        assert worker in {m.pid for m in st.members} or needs_group(job, st), out
        group = subprocess.run(["sh", "-c", group_command(job)], capture_output=True, text=True, check=True).stdout
        assert any(line.split()[0] == str(worker) for line in group.splitlines() if line.strip()), group
    finally:
        if probe is not None and probe.poll() is None:
            probe.kill()
            probe.wait(timeout=5)
        sup.kill()
        sup.wait(timeout=5)
        if worker is not None:
            subprocess.run(["kill", "-9", str(worker)], check=False)


def test_the_group_scan_succeeds_when_a_process_exits_during_it() -> None:
    # a process listed by the glob and gone before its read fails that redirection (status 2): the
    # scan must still exit 0 with what it read, even when that process came last
    job = JobRecord(attempt=1, pid=os.getpid(), pgid=os.getpgid(0))
    cmd = group_command(job).replace("/proc/[0-9]*/stat", "/proc/[0-9]*/stat /proc/999999999/stat", 1)
    res = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True)
    assert res.returncode == 0, (res.returncode, res.stderr)
    assert any(f"({os.getpid()}" in line or f"{os.getpid()} (" in line for line in res.stdout.splitlines()), res.stdout[:500]
