"""The error a verdict names when threads cut each other's lines: a dying thread's traceback whose
exception line arrived cut is the same failure as a sibling's that arrived whole and was
recognised, and the recognised name is the one the verdict gives."""

from __future__ import annotations

import re

from cockpit.core.actions.cause import error_cause
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
