"""torchrun's report of a failed worker, read from the log's last lines: the signal that killed it
(the one fact the report holds when the worker had no traceback of its own)."""

from __future__ import annotations

import re

from cockpit.core.actions.jobstate import LogScan
from cockpit.core.actions.torchrun import WorkerSignal, worker_signal
from cockpit.core.outcome import handled_last
from cockpit.core.probes.signatures import Classifier

LIB = "/usr/local/lib/python3.10/dist-packages/torch/distributed"


def report(root: list[str]) -> list[str]:
    """What torchrun (PyTorch 2.x) prints when a worker fails: its record, its own uncaught
    ChildFailedError, the report."""
    return [
        "E0501 12:00:02.456000 140 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -9) "
        "local_rank: 0 (pid: 599) of binary: /usr/bin/python3",
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        f'  File "{LIB}/launcher/api.py", line 264, in launch_agent',
        "    raise ChildFailedError(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60, "train.py FAILED", "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
        "Root Cause (first observed failure):", "[0]:",
        "  time      : 2026-12-05_08:40:00", "  host      : ct200", *root, "  error_file: <N/A>",
        "=" * 60,
    ]


KILLED = ["  rank      : 3 (local_rank: 1)", "  exitcode  : -9 (pid: 599)", "  traceback : Signal 9 (SIGKILL) received by PID 599"]
RAISED = ["  rank      : 0 (local_rank: 0)", "  exitcode  : 1 (pid: 599)",
          "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"]


def test_a_worker_killed_by_a_signal_is_named_with_its_rank_and_pid() -> None:
    w = worker_signal(["step 40 loss 0.1", *report(KILLED)])
    assert w == WorkerSignal(9, "SIGKILL", 599, 3)
    assert w.describe() == "torchrun's worker (rank 3, pid 599) was killed by signal 9 (SIGKILL)"


def test_a_worker_that_raised_or_no_report_is_no_signal() -> None:
    assert worker_signal(report(RAISED)) is None
    assert worker_signal(["step 1 loss 2.0", "Traceback (most recent call last):", "ValueError: x"]) is None
    # the last report counts: a restart that later failed by raising is not the earlier kill
    assert worker_signal([*report(KILLED), "step 1 loss 2.0", *report(RAISED)]) is None


def test_torchruns_own_traceback_is_no_error_the_job_logged_as_a_warning() -> None:
    scan = LogScan(re.compile(r"^step \d+"), Classifier())
    scan.feed(("\n".join(["step 1 loss 2.0", *report(KILLED)]) + "\n").encode())
    scan.flush()
    assert [m.kind for m in scan.classifier.matches if m.traceback] == ["torchrun-child-failed"]
    assert handled_last(scan) is None
