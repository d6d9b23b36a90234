"""The error a verdict names when threads cut each other's lines: a dying thread's traceback whose
exception line arrived cut is the same failure as a sibling's that arrived whole and was
recognised, and the recognised name is the one the verdict gives."""

from __future__ import annotations

import re

from cockpit.core.actions.cause import error_cause
from cockpit.core.actions.causebase import survived
from cockpit.core.actions.jobstate import LogScan
from cockpit.core.probes.signatures import Classifier

FX = "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function. This is not supported at the moment."


def thread_tb(name: str, exc_line: str) -> str:
    return (f"Exception in thread {name}:\nTraceback (most recent call last):\n"
            '  File "/app/drafter.py", line 41, in run\n    self.model(x)\n'
            f"{exc_line}\n")


def scan_of(text: str) -> LogScan:
    scan = LogScan(re.compile(r"^step \d+"), Classifier())
    scan.feed(text.encode())
    scan.flush()
    return scan


def test_a_cut_first_traceback_is_named_by_its_recognised_sibling() -> None:
    # drafter-0's exception line was cut by another thread's step line; drafter-1's arrived whole
    log = "step 1 loss 2\n" + thread_tb("drafter-0", "RuntimeError: Detect") + "step 2 loss 2\n" + thread_tb("drafter-1", FX)
    scan = scan_of(log)
    assert [e.label for e in scan.errors()][0] == "RuntimeError: Detect"  # the first, as the log has it
    cause = error_cause(scan)
    assert cause is not None
    assert cause.detail.startswith("threads drafter-0, drafter-1 died: FX traced a dynamo-optimized function"), cause.detail


def test_a_different_exception_first_keeps_its_own_name() -> None:
    log = thread_tb("loader", "ValueError: bad shard 7") + thread_tb("drafter-1", FX)
    cause = error_cause(scan_of(log))
    assert cause is not None and cause.detail.startswith("threads loader, drafter-1 died: ValueError: bad shard 7"), cause.detail


def test_a_main_thread_traceback_first_keeps_its_own_name() -> None:
    log = "Traceback (most recent call last):\n  File \"/app/train.py\", line 3, in <module>\n    main()\nRuntimeError: CUDA out of mem\n" \
          + thread_tb("drafter-1", FX)
    cause = error_cause(scan_of(log))
    assert cause is not None and "RuntimeError: CUDA out of mem" in cause.detail, cause.detail


RETRIED = ["step 1 loss 2.0", "Traceback (most recent call last):", '  File "/app/data.py", line 9, in fetch',
           "    raise ConnectionResetError(104, 'Connection reset by peer')",
           "ConnectionResetError: [Errno 104] Connection reset by peer", "shard fetch failed, retrying",
           "step 2 loss 1.9", "step 3 loss 1.8"]
SHAPE = ["Traceback (most recent call last):", '  File "/app/train.py", line 40, in <module>', "    loss = crit(out, y)",
         "ValueError: Target size (torch.Size([32, 1])) must be the same as input size (torch.Size([32, 10]))"]


def test_a_death_is_not_the_error_the_job_trained_past() -> None:
    scan = scan_of("\n".join([*RETRIED, *SHAPE]) + "\n")
    assert [e.label.split(":")[0] for e in survived(scan)] == ["ConnectionResetError"]
    died = error_cause(scan, death=True)
    assert died is not None and died.detail.startswith("ValueError: Target size")
    assert died.detail.endswith("(after an earlier error it trained past: ConnectionResetError: [Errno 104] Connection reset by peer)")
    assert died.data["survived_errors"] == 1
    # while the job lives, the first error is still what fails it (the settle window's rule)
    alive = error_cause(scan)
    assert alive is not None and alive.detail.startswith("ConnectionResetError") and "(+1 more error)" in alive.detail
    # no error after the last progress: none of them is the death
    assert error_cause(scan_of("\n".join(RETRIED) + "\n"), death=True) is None
