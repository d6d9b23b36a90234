"""The job-state probe's parser and the log judge, without the lab: foreign exit statuses, the
leader (not the supervisor), and remote text that never ends a line."""

from __future__ import annotations

import re

from cockpit.core.actions.job import JobRecord
from cockpit.core.actions.jobstate import MAX_LINE, LogScan, parse_state
from cockpit.core.probes.signatures import Classifier


def stat(pid: int, comm: str, state: str, ppid: int, pgid: int, start: int, threads: int = 1) -> str:
    fields = [state, str(ppid), str(pgid), str(pgid), "0", "-1", "0", "0", "0", "0", "0", "0", "0", "0", "0", "20", "0",
              str(threads), "0", str(start)] + ["0"] * 30
    return f"{pid} ({comm}) " + " ".join(fields)


def output(*, pid: int = 40, exit_text: str = "", stats: list[str], log: bytes = b"") -> bytes:
    head = f"pid={pid}\nexit={exit_text}\nexit_mtime=\nsize={len(log)}\nlog_mtime=100\nnow=105\ninit=\n@@stat\n"
    return head.encode() + "\n".join(stats).encode() + b"\n@@log\n" + log


JOB = JobRecord(pid=40, pgid=40, start_time=1000)


def test_the_leader_is_the_job_not_its_supervisor():
    st = parse_state(output(stats=[stat(40, "sh", "S", 1, 40, 1000), stat(41, "python3", "Zl", 40, 40, 1001, threads=5)]), JOB)
    assert st.supervisor is not None and st.leader is not None and st.leader.pid == 41
    assert not st.alive and not st.exited  # a zombie python under a live supervisor: dead, status not yet written
    st = parse_state(output(stats=[stat(40, "sh", "S", 1, 40, 1000), stat(41, "sh", "S", 40, 40, 1001),
                                   stat(42, "python3", "S", 41, 40, 1002, threads=9)]), JOB)
    assert st.leader is not None and st.leader.pid == 42 and st.alive and "9 threads" in st.describe()


def test_an_exit_status_written_by_another_launch_is_not_ours():
    st = parse_state(output(exit_text="0 77", stats=[]), JOB)
    assert st.exit_code is None and st.exit_foreign == "0 77"
    st = parse_state(output(exit_text="137 40", stats=[]), JOB)
    assert st.exit_code == 137 and st.exited


def test_a_reused_supervisor_pid_is_not_the_job():
    st = parse_state(output(stats=[stat(40, "bash", "S", 1, 40, 5555)]), JOB)
    assert st.supervisor is None


def test_malformed_output_is_no_reading_not_a_crash():
    for junk in (b"", b"garbage", b"pid=x\n@@stat\nnot a stat line\n", b"\x00\xff@@stat\n@@log\n"):
        st = parse_state(junk, JOB)
        assert not st.alive


def test_megabytes_without_a_newline_are_cut_not_kept():
    scan = LogScan(re.compile(r"^step \d+"), Classifier())
    for _ in range(40):
        scan.feed(b"x" * (1 << 20))
        assert len(scan.partial) <= MAX_LINE
    scan.feed(b"\nstep 7 loss 1.0\n")
    assert scan.progress_count == 1 and max(len(line) for line in scan.tail_lines) < MAX_LINE + 64


def test_a_line_signature_error_is_counted_once():
    from cockpit.core.actions.cause import error_cause
    from cockpit.core.probes.signatures import load_signatures

    classifier = Classifier(user=load_signatures([{"pattern": "^step 3 ", "layer": "app", "label": "cursed step", "kind": "cursed"}]))
    scan = LogScan(re.compile(r"^step \d+"), classifier)
    scan.feed(b"step 1 a\nstep 2 a\nstep 3 a\nstep 4 a\n")
    scan.flush()
    assert [e.label for e in scan.errors()] == ["cursed step"]
    cause = error_cause(scan)
    assert cause is not None and cause.detail == "cursed step" and cause.data["errors"] == 1


def test_the_exit_file_is_read_after_the_processes_and_parsed_from_a_real_reading(tmp_path):
    """A supervisor gone from the process table wrote its status before it went: read in that order,
    one reading never shows a job that exited 0 as gone without a status (it once said "the job and
    its supervisor are gone without an exit status" of a finished torch job)."""
    import subprocess
    import sys

    from cockpit.core.actions.jobstate import state_command

    sup = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        log = tmp_path / "train.log"
        log.write_text("step 1\n")
        pid_file, exit_file = tmp_path / "train.log.x.pid", tmp_path / "train.log.x.exit"
        pid_file.write_text(f"{sup.pid}\n")
        exit_file.write_text(f"0 {sup.pid}\n")
        job = JobRecord(pid=sup.pid, pgid=None, log_path=str(log), pid_file=str(pid_file), exit_file=str(exit_file))
        cmd = state_command(job, 0)
        assert cmd.index("/proc/$c/stat") < cmd.index(str(exit_file)), "the exit file must be read after the process table"
        out = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, check=True).stdout
        st = parse_state(out, job)
        assert st.supervisor is not None and st.supervisor.pid == sup.pid
        assert st.exit_code == 0 and st.exit_at is not None and st.data == b"step 1\n"
    finally:
        sup.communicate(b"")


def test_times_are_read_to_the_millisecond_where_the_target_gives_them():
    body = b"\n@@stat\n@@exit\nexit=1 40\nexit_mtime=1733000000.250\nsize=0\nlog_mtime=1733000000.125\nnow=1733000001.5\n@@log\n"
    st = parse_state(b"pid=40" + body, JOB)
    assert (st.exit_at, st.log_mtime, st.remote_now) == (1733000000.25, 1733000000.125, 1733000001.5)
    assert st.exit_ago() == 1.25
    # whole seconds still read; anything else (a BusyBox date's literal %N) is no time at all
    st = parse_state(b"pid=40\n@@stat\n@@exit\nexit=1 40\nexit_mtime=1733000000\nnow=1733000001.%N\n@@log\n", JOB)
    assert st.exit_at == 1733000000.0 and st.remote_now is None
