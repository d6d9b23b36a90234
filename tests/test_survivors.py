"""The rules of :mod:`cockpit.core.actions.survivors` on readings as the job probe prints them.

Each reading is the text :func:`~cockpit.core.actions.jobstate.state_command` prints (its
``/proc/PID/stat`` lines included), parsed by the real parser; the lab tests
(``tests/test_launchers_lab.py``) run the same rules against real launcher jobs.
"""

from __future__ import annotations

import re
import time

from cockpit.core.actions.job import JobRecord
from cockpit.core.actions.jobstate import JobState, LogScan, parse_state
from cockpit.core.actions.survivors import LINGER_S, MainSeen, adopt, gone_cause, main_exited, needs_group, pick_survivor, seen_main, short_command
from cockpit.core.layers import Layer
from cockpit.core.probes.signatures import Classifier
from cockpit.core.procstat import read_stat

SUP = 100


def stat(pid: int, comm: str, state: str = "S", ppid: int = 1, pgid: int = SUP, start: int = 5000) -> str:
    return f"{pid} ({comm}) {state} {ppid} {pgid} {pgid} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {start}"


def reading(job: JobRecord, *stats: str, exit: str = f"0 {SUP}", size: int = 100, log_mtime: int = 1000, exit_mtime: int = 1000) -> JobState:
    head = (f"pid={SUP}\nexit={exit}\nexit_mtime={exit_mtime}\nsize={size}\nlog_mtime={log_mtime}\nnow=1010\ninit=\n")
    return parse_state((head + "@@stat\n" + "\n".join(stats) + "\n@@log\n").encode(), job)


def record() -> JobRecord:
    return JobRecord(attempt=1, pid=SUP, pgid=SUP, start_time=4000, launched_at=time.time() - 10)


def scan(*lines: str) -> LogScan:
    s = LogScan(re.compile(r"^step \d+"), Classifier())
    s.feed("".join(line + "\n" for line in lines).encode())
    return s


def test_a_written_status_with_the_group_alive_is_the_launchers_and_the_trainer_leads():
    job = record()
    st = reading(job, stat(151, "sh", start=5001), stat(150, "python3", start=5002), stat(152, "pt_data_worker", start=5003))
    assert st.exit_code == 0 and not st.alive  # as the probe reads it, without the rule
    new = adopt(job, st)
    assert new is not None and new.pid == 150  # a non-shell first, then the oldest
    assert st.exit_code is None and st.launcher_exit == 0 and st.alive and not st.exited
    assert st.leader is not None and st.leader.pid == 150
    assert st.describe() == "launcher exited 0; trainer pid 150 (python3) continues: python3 pid 150 S, 1 threads"
    assert (job.survivor_pid, job.survivor_start, job.launcher_exit) == (150, 5002, 0)
    again = reading(job, stat(150, "python3", start=5002), size=400)
    assert adopt(job, again) is None and again.alive  # the same survivor: nothing new to learn


def test_when_the_survivor_is_gone_and_the_log_grew_the_end_comes_from_the_log():
    job = record()
    adopt(job, reading(job, stat(150, "python3", start=5002)))
    for lines, state, layer in (
        (("step 1", "step 2", "training done"), "finished", Layer.APP),
        (("step 1", "Traceback (most recent call last):", '  File "t.py", line 3, in <module>', "RuntimeError: boom"), "died", Layer.APP),
        (("starting",), "vanished", Layer.PROCESS),
    ):
        st = reading(job, size=900, log_mtime=1004)
        adopt(job, st)
        assert st.exit_code is None and st.launcher_exit == 0 and not st.alive, lines
        cause = gone_cause(job, st, scan(*lines))
        assert cause is not None and (cause.state, cause.layer) == (state, layer), (lines, cause)
        assert cause.detail.startswith("launcher exited 0; the trainer pid 150 (python3) "), cause.detail
        assert "its exit status was not observed (its launcher exited first)" in cause.detail
    assert "RuntimeError" in gone_cause(job, st, scan("Traceback (most recent call last):", "RuntimeError: boom")).detail  # type: ignore[union-attr]


def test_a_child_that_outlives_the_job_a_moment_without_writing_leaves_the_exit_status_the_jobs():
    job = record()
    adopt(job, reading(job, stat(150, "python3", start=5002), exit=f"3 {SUP}"))
    assert job.survivor_pid == 150
    st = reading(job, exit=f"3 {SUP}")  # gone at once, the log as it was
    adopt(job, st)
    assert st.exit_code == 3 and st.launcher_exit is None and gone_cause(job, st, scan("x")) is None
    job.survivor_since = time.time() - LINGER_S  # followed that long: it was the job, silent or not
    st = reading(job, exit=f"3 {SUP}")
    adopt(job, st)
    assert st.exit_code is None and st.launcher_exit == 3


def test_a_fresh_reader_knows_by_the_log_written_after_the_status():
    job = record()  # the journal's record: no survivor learned
    st = reading(job, log_mtime=1009, exit_mtime=1000)
    adopt(job, st)
    cause = gone_cause(job, st, scan("step 1", "step 2"))
    assert cause is not None and cause.state == "finished"
    assert cause.detail.startswith("launcher exited 0; what it left running ended with no error in its log after 2 progress lines")
    same = record()
    st = reading(same, log_mtime=1000, exit_mtime=1000)  # a plain job: its log ends before its status
    adopt(same, st)
    assert st.exit_code == 0 and gone_cause(same, st, scan("step 1")) is None


def test_a_supervisor_still_shown_needs_the_group_read_and_a_scheduler_job_is_left_alone():
    job = record()
    st = reading(job, stat(SUP, "sh", state="Z", start=4000))
    assert needs_group(job, st) and adopt(job, st) is None and st.exit_code == 0
    slurm = JobRecord(attempt=1, pid=SUP, pgid=SUP, scheduler="slurm", sched_id="7")
    st = reading(slurm, stat(150, "python3"))
    assert not needs_group(slurm, st) and adopt(slurm, st) is None and st.exit_code == 0 and st.launcher_exit is None


def test_the_survivor_and_its_command_as_named():
    procs = [read_stat(stat(7, "bash", start=1)), read_stat(stat(9, "python3", start=3)), read_stat(stat(8, "python3", start=2))]
    assert pick_survivor([p for p in procs if p is not None]).pid == 8
    assert short_command(["/usr/bin/python3", "/work/x/train.py", "--out", "/data/run"]) == "python3 train.py --out /data/run"
    assert len(short_command(["python3", "t.py", "x" * 200])) == 80


def test_a_wrapper_shell_that_exits_0_after_progress_is_the_jobs_end_unless_it_leaves_a_program() -> None:
    sh = read_stat(stat(101, "bash", ppid=SUP))
    trainer = read_stat(stat(102, "python3", ppid=101, start=5001))
    worker = read_stat(stat(103, "python3", ppid=102, start=5002))
    monitor = read_stat(stat(104, "sleep", ppid=101, start=5001))
    assert sh and trainer and worker and monitor
    seen = MainSeen.of(sh, [sh, trainer, worker, monitor], progressed=True)
    assert seen.helpers == {(103, 5002)}  # started by a program: the trainer's worker
    gone = [read_stat(stat(p.pid, p.comm, ppid=1, start=p.start_time)) for p in (worker, monitor)]
    assert main_exited(seen, 0, [p for p in gone if p])  # a train.sh: its monitor and its trainer's worker linger
    left = read_stat(stat(102, "python3", ppid=1, start=5001))
    assert left and not main_exited(seen, 0, [left])  # a program it left behind: a launcher that waited, perhaps
    assert not main_exited(MainSeen.of(sh, [sh, monitor], progressed=False), 0, [monitor])  # before progress: a launcher
    assert main_exited(seen, 1, [left])  # a failure is the job's whatever lives on


def test_a_status_that_leaves_only_a_monitor_is_the_jobs_own_even_when_no_reading_saw_the_trainer() -> None:
    # a train.sh whose trainer ran and exited between two readings (a loaded machine): its `sleep`
    # heartbeat, reparented, is all that lives; it never carries training on, so the 0 is the job's
    job = record()
    st = reading(job, stat(160, "sleep", ppid=1, start=5004))
    assert adopt(job, st) is None
    assert st.exit_code == 0 and st.launcher_exit is None and job.survivor_pid is None
    assert [p.pid for p in st.leftovers] == [160]
    # a program left behind is still a launcher's trainer, the monitor beside it or not
    job = record()
    st = reading(job, stat(160, "sleep", ppid=1, start=5001), stat(150, "python3", start=5002))
    assert adopt(job, st) is not None and st.launcher_exit == 0 and job.survivor_pid == 150  # the older sleep is never it


def test_a_worker_orphaned_while_the_wrapper_lives_is_the_trainers_not_a_trainer_left_behind() -> None:
    # a train.sh (pid 151) ran its trainer in the foreground; no reading caught the trainer alive, one
    # caught its worker already reparented to PID 1 while the script lived (a loaded machine)
    lead = read_stat(stat(151, "bash", ppid=SUP, start=5001))
    worker = read_stat(stat(170, "python3", ppid=1, start=5003))
    heartbeat = read_stat(stat(171, "sleep", ppid=151, start=5002))
    assert lead is not None and worker is not None and heartbeat is not None
    seen = MainSeen.of(lead, [worker, heartbeat], progressed=True)
    assert (170, 5003) in seen.helpers and (171, 5002) not in seen.helpers
    assert main_exited(seen, 0, [worker, heartbeat])  # the script's exit 0 is the job's; they linger
    launcher = MainSeen.of(lead, [heartbeat], progressed=True)  # the program it leaves was never seen orphaned
    assert not main_exited(launcher, 0, [worker, heartbeat])


def test_a_train_sh_whose_trainer_exited_stays_the_main_process_while_only_its_heartbeat_is_left() -> None:
    # `bash -c "sleep 60 & python3 train.py"`: the readings see the script with two children; the
    # trainer exits 0, and one reading sees the script alive with only its heartbeat left (the
    # probe's leader looks through a shell with one child) and the trainer's worker under PID 1
    job = record()
    sup, sh = stat(SUP, "python3", ppid=1, start=4000), stat(151, "bash", ppid=SUP, start=5001)
    beat = stat(171, "sleep", ppid=151, start=5002)
    running = reading(job, sup, sh, beat, stat(160, "python3", ppid=151, start=5003), stat(170, "python3", ppid=160, start=5004), exit="")
    main = seen_main(None, running, progressed=True)
    assert main is not None and (main.pid, main.comm) == (151, "bash") and (170, 5004) in main.helpers
    last = reading(job, sup, sh, beat, stat(170, "python3", ppid=1, start=5004), exit="")
    assert last.leader is not None and last.leader.pid == 171  # the probe's own reading of the leader
    main = seen_main(main, last, progressed=True)
    assert main is not None and (main.pid, main.comm) == (151, "bash") and (170, 5004) in main.helpers
    ended = reading(job, beat, stat(170, "python3", ppid=1, start=5004))  # the script's exit 0 is written
    assert adopt(job, ended, main) is None and ended.exit_code == 0 and job.survivor_pid is None
    assert sorted(p.pid for p in ended.leftovers) == [170, 171]
    # a shell seen first with one child (its heartbeat, the trainer not forked yet) is no main process to keep
    first = reading(job, sup, sh, beat, exit="")
    early = seen_main(None, first, progressed=False)
    assert early is not None and early.pid == 171
    assert (m := seen_main(early, running, progressed=True)) is not None and m.pid == 151
