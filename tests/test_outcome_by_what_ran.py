"""Units: the outcome by what ran, the severity a log record gives its traceback, the shells' crash
lines, PyTorch's disk-full texts and the disk check's reading of real ``df`` output."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from cockpit.core.actions.diskcheck import LOW_FREE, DiskUse, describe, disk_command, full_filesystems, parse_disk
from cockpit.core.actions.jobstate import LogScan
from cockpit.core.layers import Layer, Outcome, Ran, Stage, Status, Verdict, outcome_of
from cockpit.core.outcome import code_ran, findings_text, handled_last, last_words, log_findings
from cockpit.core.probes.signatures import Classifier
from cockpit.core.probes.tb_parts import record_level

# --------------------------------------------------------------------------------------------
# the one outcome function

NEVER = Ran(progress=0, lines=1)  # one line: the shell or the interpreter saying it could not start
RAN_PROGRESS = Ran(progress=60, lines=61)
RAN_OUTPUT = Ran(progress=0, lines=12)  # no progress marker matched, but the job wrote on

OUTCOMES = [
    # (failed layer, failed stage, job started, ran, lost, outcome)
    (None, None, True, RAN_PROGRESS, False, Outcome.PASSED),
    (Layer.APP, "verify: settled", True, RAN_PROGRESS, False, Outcome.FAILED),
    (Layer.APP, "verify: progress", True, NEVER, False, Outcome.FAILED),  # a traceback is the code running
    (Layer.PROCESS, "verify: alive", True, RAN_PROGRESS, False, Outcome.FAILED),  # its own guard's exit 1
    (Layer.PROCESS, "verify: alive", True, RAN_OUTPUT, False, Outcome.FAILED),  # a signal after its output
    (Layer.PROCESS, "verify: alive", True, NEVER, False, Outcome.UNTESTED),  # can't open file: never ran
    (Layer.PROCESS, "verify: alive", True, None, False, Outcome.UNTESTED),  # no log read
    (Layer.CONTAINER, "verify: alive", True, RAN_PROGRESS, False, Outcome.FAILED),  # its disk filled up
    (Layer.CONTAINER, "verify: alive", True, NEVER, False, Outcome.UNTESTED),  # exit 127: not found
    (Layer.GPU, "verify: alive", True, RAN_PROGRESS, False, Outcome.FAILED),
    (Layer.GPU, "verify: progress", True, NEVER, False, Outcome.FAILED),  # after the start
    (Layer.GPU, "launch: gpu", False, None, False, Outcome.UNTESTED),
    (Layer.SSH, "connect: ssh", False, None, False, Outcome.UNTESTED),
    (Layer.HOST, "launch: spawn", False, RAN_PROGRESS, False, Outcome.UNTESTED),  # an old log is not this run
    (Layer.HOST, "verify: alive", True, RAN_PROGRESS, False, Outcome.UNTESTED),  # the container restarted under it
    (Layer.SSH, "verify: alive", True, RAN_PROGRESS, True, Outcome.INTERRUPTED),  # lost: unjudged
]


@pytest.mark.parametrize(("layer", "stage", "started", "ran", "lost", "expected"), OUTCOMES)
def test_the_outcome_is_failed_whenever_the_code_ran_and_untested_only_when_it_never_did(layer, stage, started, ran, lost,
                                                                                         expected):
    v = Verdict("attempt")
    v.add(Stage("connect: ssh", Status.OK, Layer.SSH))
    if layer is not None:
        v.add(Stage(stage, Status.FAIL, layer, "it failed", data={"lost": True} if lost else {}))
    assert outcome_of(v, job_started=started, ran=ran) is expected


def scan_of(lines: list[str], progress: str = r"^step \d+") -> LogScan:
    scan = LogScan(re.compile(progress), Classifier())
    scan.feed(("\n".join(lines) + "\n").encode())
    scan.flush()
    return scan


def test_the_shells_own_lines_are_not_the_jobs_output():
    assert not code_ran(scan_of(["Segmentation fault"])).ran
    assert not code_ran(scan_of(["sh: 1: python9: not found"])).ran
    assert not code_ran(scan_of(["hello", "Killed"])).ran  # one line of its own, then the shell's
    assert code_ran(scan_of(["loading data", "building model", "Segmentation fault (core dumped)"])).ran
    ran = code_ran(scan_of([f"step {i} loss 2.5" for i in range(1, 61)] + ["non-finite loss (inf) at iteration 65, aborting the run"]))
    assert ran == Ran(progress=60, lines=61) and ran.ran
    assert code_ran(None) is None


# --------------------------------------------------------------------------------------------
# log record levels

LEVELS = [
    ("WARNING:dashboard:push to dashboard failed, will retry", "WARNING"),  # logging's default format
    ("INFO:root:checkpoint saved", "INFO"),
    ("ERROR:__main__:push failed", "ERROR"),
    ("CRITICAL:root:giving up", "CRITICAL"),
    ("2024-05-01 12:00:00,123 - dashboard - WARNING - push failed", "WARNING"),
    ("2024-05-01 12:00:00,123 - dashboard - ERROR - push failed", "ERROR"),
    ("[2024-05-01 12:00:00] WARNING push failed", "WARNING"),
    ("[2024-05-01 12:00:00,123][train][INFO] - epoch 3", "INFO"),  # hydra
    ("2024-05-01 12:00:00.123 | WARNING  | train:push:41 - push failed", "WARNING"),  # loguru
    ("W0501 12:00:00.123456 1234 train.py:12] push failed", "WARNING"),  # glog, as PyTorch prints it
    ("I0501 12:00:00.123456 1234 torch/distributed/run.py:12] starting", "INFO"),
    ("E0501 12:00:00.123456 1234 torch/distributed/elastic/multiprocessing/api.py:12] failed", "ERROR"),
    ("[rank1]:W1203 14:05:12.345000 4242 torch/_dynamo/convert_frame.py:1016] [0/0] due to: ", "WARNING"),
    ("step 5 loss 2.5", None),
    ("the run hit an ERROR here", None),  # a word in a message is no record head
    ("[W1203 12:00:00.000000000 ProcessGroupNCCL.cpp:1234] Warning: x", None),  # torch's C++ warning: no pid field
    ("Traceback (most recent call last):", None),
]


@pytest.mark.parametrize(("line", "level"), LEVELS)
def test_a_records_level_is_read_from_its_own_field(line, level):
    assert record_level(line) == level


TB_CAUGHT = [
    "Traceback (most recent call last):",
    '  File "/w/train.py", line 25, in train',
    "    push(step)",
    '  File "/w/train.py", line 17, in push',
    '    raise ConnectionError("dashboard refused the connection")',
    "ConnectionError: dashboard refused the connection",
]
TB_UNCAUGHT = [
    "Traceback (most recent call last):",
    '  File "/w/train.py", line 40, in <module>',
    "    main()",
    '  File "/w/train.py", line 30, in main',
    '    raise ValueError("bad batch")',
    "ValueError: bad batch",
]


def severities(lines: list[str]) -> tuple[list[str], list[str]]:
    scan = scan_of(lines)
    errors = [m.label for m in scan.errors()]
    warnings = [f.summary for f in log_findings(scan)]
    return errors, warnings


@pytest.mark.parametrize("head", [
    "WARNING:dashboard:push to dashboard failed, will retry",
    "2024-05-01 12:00:00,123 - dashboard - WARNING - push to dashboard failed, will retry",
    "[2024-05-01 12:00:00] WARNING push to dashboard failed, will retry",
    "INFO:dashboard:push to dashboard failed, will retry",
])
def test_a_caught_traceback_a_warning_or_info_record_carries_is_a_finding(head):
    errors, warnings = severities(["step 1 loss 2.5", head, *TB_CAUGHT, "step 2 loss 2.4"])
    assert errors == [] and warnings == ["ConnectionError: dashboard refused the connection"]


@pytest.mark.parametrize("head", ["ERROR:dashboard:push failed", "2024-05-01 12:00:00,123 - dashboard - CRITICAL - push failed"])
def test_an_error_or_critical_record_stays_a_failure(head):
    errors, warnings = severities(["step 1 loss 2.5", head, *TB_CAUGHT, "step 2 loss 2.4"])
    assert errors == ["ConnectionError: dashboard refused the connection"] and warnings == []


def test_an_uncaught_exception_after_an_info_line_stays_a_failure():
    errors, _ = severities(["step 1 loss 2.5", "INFO:root:epoch 1 done", *TB_UNCAUGHT])
    assert errors == ["ValueError: bad batch"]


def glog(level: str, lines: list[str]) -> list[str]:
    prefix = f"{level}1203 14:05:12.345000 4242 /w/train.py:31] "
    return [prefix + line for line in lines]


def test_a_glog_record_gives_its_level_to_the_traceback_on_every_line():
    errors, warnings = severities(["step 1 loss 2.5", *glog("W", ["push failed", *TB_UNCAUGHT]), "step 2 loss 2.4"])
    assert errors == [] and warnings == ["ValueError: bad batch"]
    errors, warnings = severities(["step 1 loss 2.5", *glog("E", ["push failed", *TB_UNCAUGHT]), "step 2 loss 2.4"])
    assert errors == ["ValueError: bad batch"] and warnings == []


# PyTorch's exact record (torch/_dynamo/convert_frame.py: log.warning(format_error_msg(...), exc_info=True);
# torch/_dynamo/exc.py format_error_msg: "WON'T CONVERT {co_name} {co_filename} line {co_firstlineno} \ndue to: \n{format_exc()}";
# torch/_logging/_internal.py TorchLogsFormatter prefixes every line of the record)
DYNAMO_PREFIX = "W1203 14:05:12.345000 4242 torch/_dynamo/convert_frame.py:1016] [0/0] "
DYNAMO_TB = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3/dist-packages/torch/_dynamo/convert_frame.py", line 1064, in __call__',
    "    result = self._inner_convert(",
    "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
    "RuntimeError: Compiler: cc is not found.",
    "",
    'Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information',
    "",
]
DYNAMO = ["WON'T CONVERT forward /w/train.py line 12 ", "due to: ", *DYNAMO_TB, "", *DYNAMO_TB[:5]]


@pytest.mark.parametrize("prefix", [DYNAMO_PREFIX, "[rank0]:" + DYNAMO_PREFIX, "WARNING:torch._dynamo.convert_frame:"])
def test_dynamos_wont_convert_is_one_compile_finding(prefix):
    record = [prefix + DYNAMO[0]] + (DYNAMO[1:] if prefix.startswith("WARNING:") else [prefix + ln for ln in DYNAMO[1:]])
    errors, warnings = severities(["step 1 loss 2.5", *record, "step 2 loss 2.4"])
    assert errors == [] and warnings == ["running eagerly: compile failed for `forward` (/w/train.py:12)"]


def test_findings_text_counts_errors_and_warnings():
    scan = scan_of(["step 1", "WARNING:d:x", *TB_CAUGHT, "ERROR:d:y", *TB_CAUGHT[:-1], "KeyError: 'k'", "step 2"])
    text = findings_text(log_findings(scan, errors=True))
    assert text == "1 error and 1 warning in the log: ConnectionError: dashboard refused the connection; KeyError: 'k'"


# --------------------------------------------------------------------------------------------
# the shells' crash lines and PyTorch's disk-full texts

SHELL_LINES = [
    ("Segmentation fault", "shell-sigsegv", "SIGSEGV"),  # dash, busybox
    ("Segmentation fault (core dumped)", "shell-sigsegv", "SIGSEGV"),
    ("bash: line 1: 31115 Segmentation fault      (core dumped) python3 train.py", "shell-sigsegv", "SIGSEGV"),
    ("bash: 31115 Segmentation fault      python3 train.py", "shell-sigsegv", "SIGSEGV"),
    ("/bin/bash: line 1:   108 Segmentation fault      /usr/bin/python3 /w/train.py", "shell-sigsegv", "SIGSEGV"),
    ("/w/run.sh: line 3:  1234 Aborted                 (core dumped) python train.py", "shell-sigabrt", "SIGABRT"),
    ("Aborted (core dumped)", "shell-sigabrt", "SIGABRT"),
    ("Bus error", "shell-sigbus", "SIGBUS"),
    ("run.sh: line 7: 4242 Bus error               (core dumped) python train.py", "shell-sigbus", "SIGBUS"),
    ("Floating point exception (core dumped)", "shell-sigfpe", "SIGFPE"),
    ("Illegal instruction", "shell-sigill", "SIGILL"),
    ("Killed", "killed", "SIGKILL"),
    ("bash: line 1: 91451 Killed                  python3 train.py", "killed", "SIGKILL"),
]


@pytest.mark.parametrize(("line", "kind", "sig"), SHELL_LINES)
def test_the_shells_crash_lines_name_the_signal(line, kind, sig):
    out = Classifier().feed(line)
    assert [(m.kind, m.layer) for m in out] == [(kind, Layer.PROCESS)]
    assert sig in out[0].label


@pytest.mark.parametrize("line", ["step 3: Aborted batch 7, skipping", "we hit a Bus error once", "Illegal instructions ahead"])
def test_prose_about_crashes_is_no_crash_line(line):
    assert not [m for m in Classifier().feed(line) if m.kind.startswith("shell-")]


@pytest.mark.parametrize(("line", "kind"), [
    ("RuntimeError: basic_ios::clear: iostream error", "torch-write-failed"),
    ("RuntimeError: [enforce fail at inline_container.cc:626] . unexpected pos 1472 vs 1366", "torch-write-failed"),
    ("RuntimeError: [enforce fail at inline_container.cc:778] . PytorchStreamWriter failed writing file data/0: file write failed",
     "torch-write-failed"),
    ("OSError: [Errno 28] No space left on device", "disk-full"),
])
def test_pytorch_disk_full_texts_are_the_containers(line, kind):
    assert [(m.kind, m.layer) for m in Classifier().feed(line)] == [(kind, Layer.CONTAINER)]


# --------------------------------------------------------------------------------------------
# the disk check reads real df output


def test_the_disk_command_reads_real_df_for_each_path_in_one_command():
    paths = [("/", "the workdir"), ("/tmp", "/tmp"), ("/nonexistent-dir-for-cockpit", "the log directory")]
    cmd = disk_command(paths)
    out = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, text=True, timeout=30, check=False).stdout
    uses = {u.path: u for u in parse_disk(out, paths)}
    assert set(uses) == {"/", "/tmp"}  # a path df cannot read is left out, not guessed
    st = os.statvfs("/")
    root = uses["/"]
    assert root.role == "the workdir" and root.mount == "/" and root.size == pytest.approx(st.f_blocks * st.f_frsize, rel=0.01)
    assert 0 <= root.pct <= 100 and root.free <= root.size
    assert root.inodes is None or root.inodes >= 0  # some filesystems report no inodes


def use(size: int, free: int, pct: int, ipct: int | None = None) -> DiskUse:
    return DiskUse("/ckpt", "the workdir", "/ckpt", "tmpfs", size, size - free, free, pct, 1000 if ipct is not None else None,
                   10 if ipct is not None else None, ipct)


@pytest.mark.parametrize(("u", "full"), [
    (use(1 << 20, 0, 100), True),
    (use(100 << 30, 1 << 30, 99), True),  # 1 GiB free of 100 GiB: 99 % used
    (use(1 << 30, 60 << 20, 95), True),  # under 64 MiB free
    (use(64 << 20, 60 << 20, 7), False),  # docker's small /dev/shm always has under 64 MiB free
    (use(100 << 30, 50 << 30, 50), False),
    (use(100 << 30, 50 << 30, 50, ipct=99), True),  # out of inodes
])
def test_full_or_nearly_full(u, full):
    assert u.full is full
    assert bool(full_filesystems([u, u])) is full and len(full_filesystems([u, u])) <= 1  # a mount once


def test_a_full_filesystem_is_named_with_its_mount_and_figures():
    assert describe(use(1 << 20, 0, 100)) == "/ckpt (the workdir's filesystem, tmpfs) is full: 0 B free of 1.0 MiB (100% used)"
    assert LOW_FREE == 64 << 20


def test_a_warning_traceback_with_no_progress_after_it_is_what_a_death_is_blamed_on():
    assert handled_last(scan_of(["step 1 loss 2.5", "WARNING:d:push failed", *TB_CAUGHT, "step 2 loss 2.4"])) is None
    last = handled_last(scan_of(["step 1 loss 2.5", "WARNING:d:push failed", *TB_CAUGHT, "giving up"]))
    assert last == "ConnectionError: dashboard refused the connection"


def test_the_jobs_last_line_is_its_last_word_unless_it_is_progress_or_the_shells():
    assert last_words(scan_of(["step 60 loss 1.9", "non-finite loss (inf) at iteration 65, aborting the run", ""])) == (
        "non-finite loss (inf) at iteration 65, aborting the run")
    assert last_words(scan_of(["step 60 loss 1.9", "giving up", "Segmentation fault"])) == "giving up"
    assert last_words(scan_of(["step 1 loss 2.5", "step 2 loss 2.4"])) is None


def test_a_crash_soon_after_an_eager_fallback_is_still_a_crash():
    record = ["WARNING:torch._dynamo.convert_frame:" + DYNAMO[0], *DYNAMO[1:]]
    errors, warnings = severities(["step 1 loss 2.5", *record, "step 2 loss 2.4", *TB_UNCAUGHT])
    assert errors == ["ValueError: bad batch"]
    assert warnings == ["running eagerly: compile failed for `forward` (/w/train.py:12)"]


@pytest.mark.parametrize("last, says", [
    ("training failed: RuntimeError('checkpoint shard 3 is corrupt')", True),
    ("RuntimeError: checkpoint shard 3 is corrupt", True),
    ("aborting: the disk is full", True),
    ("Error: cannot open the dataset", True),
    ("the run crashed, see above", True),
    # ML's own vocabulary: a metric's name is no failure
    ("validation error: 0.1200", False),
    ("epoch 10 done, val_error 0.2", False),
    ("mean squared error 0.31", False),
    ("failure rate 0.01", False),
    ("ERROR: 0.5", False),
    ("Saved checkpoint; failures: 0", False),
    ("training done", False),
])
def test_a_last_line_says_the_run_failed_only_in_words_of_failure_not_in_a_metric(last: str, says: bool) -> None:
    from cockpit.core.outcome import said_failed

    scan = LogScan(re.compile(r"^step \d+"), Classifier())
    scan.feed(f"step 1 loss 2.0\nstep 2 loss 1.9\n{last}\n".encode())
    assert (said_failed(scan) == last) is says, said_failed(scan)
