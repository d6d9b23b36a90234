"""A job that finished is never told "a zombie" because it was read between its exit and its reaping.

The job's main process exits 0; its supervisor (the ``/bin/sh`` that waits for it and writes the
exit status) is slow to reap it, as on a loaded target or while the kernel frees a large torch
process: here it is held with SIGSTOP and let go (SIGCONT) only once a reading has seen the
leader a zombie for longer than the plain "gone" confirmation (0.5 s).  Without the zombie grace,
verify and the fate follower judged that reading: "its main process … is a zombie (Z)",
``failed/process``.  With it they read again until the supervisor has written the status.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from pathlib import Path

import pytest

from cockpit.core.actions.jobstate import JobReader, JobState
from cockpit.core.fate import read_fate
from cockpit.core.layers import Outcome
from tests.lab.util import await_for

pytestmark = pytest.mark.lab

#: prints a progress line every 50 ms until ``gate`` exists in its workdir, then exits 0
GATED = ("import os, time\n"
         "i = 0\n"
         "while not os.path.exists('gate'):\n"
         "    print(f'step {i} loss=1.0', flush=True)\n"
         "    i += 1\n"
         "    time.sleep(0.05)\n"
         "print('done', flush=True)\n")
#: a reading that has seen the leader a zombie this long lets the supervisor go (> GONE_CONFIRM_S)
HELD_S = 0.8


def _config(lab, lab_config, settle: float):
    return lab_config(job={"command": f"python3 -u -c {shlex.quote(GATED)}"}, verify={"settle": settle})


class _SlowReaper:
    """Holds the supervisor stopped; lets it go at the first reading that has seen the job's
    leader waiting to be reaped for ``HELD_S`` or more."""

    def __init__(self, lab, monkeypatch, pid: int = 0) -> None:
        self.lab, self.pid = lab, pid
        self.first: float | None = None
        self.released = False
        self.reaping_reads = 0
        real = JobReader.read

        async def read(reader: JobReader) -> JobState:
            st = await real(reader)
            if self.pid and st.reaping and not self.released:
                self.reaping_reads += 1
                now = time.monotonic()
                self.first = self.first if self.first is not None else now
                if now - self.first >= HELD_S:
                    self.released = True
                    await asyncio.to_thread(lab.exec_in, 200, f"kill -CONT {self.pid}", check=True)
            return st

        monkeypatch.setattr(JobReader, "read", read)

    def hold(self, ws: Path, pid: int) -> None:
        _hold(self.lab, ws, pid)
        self.pid = pid


def _hold(lab, ws: Path, pid: int) -> None:
    lab.exec_in(200, f"kill -STOP {pid}", check=True)
    (ws / "gate").touch()  # the job ends now; its supervisor cannot reap it until let go


def _child_states(lab, pid: int) -> str:
    return lab.exec_in(200, f"for c in $(cat /proc/{pid}/task/*/children); do cut -d' ' -f3 /proc/$c/stat; done").stdout.strip()


async def test_verify_reads_a_finished_job_as_finished_while_its_supervisor_is_slow_to_reap(lab, lab_config, engines, monkeypatch):
    ws = lab.workspace()
    (ws / "gate").unlink(missing_ok=True)
    eng = engines(_config(lab, lab_config, settle=20))
    slow = _SlowReaper(lab, monkeypatch)
    before = eng.job  # the journal's last job, from an earlier test
    attempt = asyncio.create_task(eng.attempt("slow reap"))

    def stepping() -> int:
        job = eng.job
        fresh = job is not None and job is not before and job.pid and Path(job.log_path).is_file()
        return int(job.pid or 0) if fresh and job is not None and "step 3" in Path(job.log_path).read_text() else 0

    await await_for(stepping, 20, "the job stepping")
    slow.hold(ws, stepping())
    res = await asyncio.wait_for(attempt, 40)
    alive = next(s for s in res.verdict.stages if s.name.endswith("alive"))
    assert slow.released and slow.reaping_reads >= 2, (slow.released, slow.reaping_reads)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert alive.detail.startswith("finished") and "zombie" not in alive.detail, alive.detail


async def test_the_fate_of_a_finished_job_read_while_its_supervisor_is_slow_to_reap_is_finished(lab, lab_config, engines, monkeypatch):
    ws = lab.workspace()
    (ws / "gate").unlink(missing_ok=True)
    eng = engines(_config(lab, lab_config, settle=0.3))
    res = await eng.attempt("passes")
    assert res.outcome is Outcome.PASSED and res.job is not None, res.verdict.summary()
    _hold(lab, ws, res.job.pid)
    await await_for(lambda: _child_states(lab, res.job.pid) == "Z", 20, "the job exited, not reaped")
    slow = _SlowReaper(lab, monkeypatch, res.job.pid)
    fate = await asyncio.wait_for(read_fate(eng.context(), res.job), 20)
    assert slow.released and slow.reaping_reads >= 2, (slow.released, slow.reaping_reads)
    assert fate.state == "finished" and fate.layer is None, fate
    assert "zombie" not in fate.cause, fate
