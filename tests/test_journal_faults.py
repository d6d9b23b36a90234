"""A journal that cannot be written (disk full, read-only file system) loses nothing it can keep and
raises nothing (issue 10): the records wait in memory, in order, the failure is a ``config``-layer
problem naming the path and the fix, and they land once the path is writable again.

The faults are real: ``journal.jsonl`` is a symlink to ``/dev/full`` (every write fails with
ENOSPC), or lives on a read-only tmpfs mounted in a private mount namespace.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome


def _make_full(path: Path) -> Path:
    """Move the journal aside and put /dev/full in its place; returns where it went."""
    saved = path.with_name("journal.saved")
    os.rename(path, saved)
    os.symlink("/dev/full", path)
    return saved


def _make_writable(path: Path, saved: Path) -> None:
    os.unlink(path)
    os.rename(saved, path)


def test_a_full_journal_queues_in_order_answers_reads_and_writes_it_all_later(tmp_path):
    path = tmp_path / ".cockpit" / "journal.jsonl"
    j = Journal(path)
    a = j.start_attempt("before the disk filled", "lab")
    j.finish_attempt(a, Outcome.FAILED, layer=Layer.APP)
    assert [r.attempt for r in j.attempts()] == [1]
    saved = _make_full(path)

    b = j.start_attempt("while full", "lab")  # no exception
    j.record_job(b, {"pid": 4242, "pgid": 4242, "start_time": 99, "log_path": "/w/train-2.log"})
    j.finish_attempt(b, Outcome.PASSED)
    assert b == 2 and j.pending == 3
    f = j.fault
    assert f is not None and f.errno == errno.ENOSPC and f.queued == 3
    assert f"cannot write the journal {path}: No space left on device" in f.problem
    assert f"free space on the disk that holds {path.parent}" in f.fix and "[journal] path" in f.fix
    assert f.to_dict()["layer"] == "config" and f.to_dict()["key"] == "journal.path"
    assert j.get(2) is not None and j.get(2).job["pid"] == 4242 and j.next_id() == 3  # reads see the queue
    assert not j.flush() and j.pending == 3  # still full: nothing lost, nothing written twice

    queued = j.unwritten()
    _make_writable(path, saved)
    assert j.flush() and j.pending == 0 and j.fault is None
    evs = list(Journal(path).events())
    assert [(e["attempt"], e["event"]) for e in evs] == [
        (1, "attempt_started"), (1, "attempt_finished"), (2, "attempt_started"), (2, "job"), (2, "attempt_finished")]
    assert [e["ts"] for e in evs[2:]] == [e["ts"] for e in queued]  # in the order they happened
    assert Journal(path).get(2).job["pid"] == 4242  # a later cockpit can stop the job


def test_a_write_after_the_fault_writes_the_queue_first(tmp_path):
    path = tmp_path / "journal.jsonl"
    j = Journal(path)
    j.start_attempt("one", "lab")
    saved = _make_full(path)
    j.record(1, "note", text="queued")
    _make_writable(path, saved)
    j.record(1, "note", text="after")  # the next write retries the queue, then itself
    assert [e.get("text") for e in Journal(path).events()][1:] == ["queued", "after"] and j.fault is None


def test_a_looser_journal_and_its_directory_are_tightened_on_open_with_no_data_loss(tmp_path):
    d = tmp_path / ".cockpit"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    path = d / "journal.jsonl"
    Journal(path).start_attempt("old", "lab")
    os.chmod(path, 0o644)
    before = path.read_bytes()
    j = Journal(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(d.stat().st_mode) == 0o700
    assert path.read_bytes() == before and [r.note for r in j.attempts()] == ["old"]


def test_a_journal_in_a_directory_the_user_chose_leaves_that_directory_alone(tmp_path):
    shared = tmp_path / "notes"
    shared.mkdir()
    os.chmod(shared, 0o755)
    Journal(shared / "journal.jsonl").start_attempt("x", "lab")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    assert stat.S_IMODE((shared / "journal.jsonl").stat().st_mode) == 0o600


# -- the engine and the CLI against the lab ---------------------------------------------------------

@pytest.mark.lab
async def test_an_attempt_on_a_full_journal_keeps_its_job_and_writes_it_all_later(lab, lab_config, engines):
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", "0", "--interval", "0.05")})
    path = cfg.journal_path
    j = Journal(path)
    j.finish_attempt(j.start_attempt("an earlier attempt", "lab"), Outcome.FAILED, layer=Layer.APP)
    eng = engines(cfg)  # cockpit runs; then the disk fills
    saved = _make_full(path)
    res = await eng.attempt("the disk is full", follow=False)  # no exception escapes
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert res.attempt == 2 and eng.job is not None and eng.job.pid == res.job.pid and eng.job_attempt == 2
    fault = eng.journal.fault
    assert fault is not None and fault.errno == errno.ENOSPC and str(path) in fault.problem
    queued = eng.journal.unwritten()
    assert queued[0]["event"] == "attempt_started" and queued[-1]["event"] in ("attempt_finished", "fate")
    assert eng.journal.get(2).job["pid"] == res.job.pid  # the engine's own reads see the queued record

    _make_writable(path, saved)
    assert eng.journal.flush() and eng.journal.fault is None
    evs = list(Journal(path).events())
    assert [(e["attempt"], e["event"], e["ts"]) for e in evs[2:]] == [(e["attempt"], e["event"], e["ts"]) for e in queued]
    later = Journal(path).get(2)
    assert later.job["pid"] == res.job.pid and later.job["pgid"] == res.job.pgid and later.outcome is Outcome.PASSED


def _cockpit(*args: str, timeout: float = 120, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, sys.executable, "-m", "cockpit", *args], capture_output=True, text=True, timeout=timeout)


def _job_from_stderr(lab, err: str) -> tuple[int, int]:
    m = re.search(r"recorded nowhere .*?: pid (\d+), process group (\d+)", err)
    assert m, err
    pid, pgid = int(m.group(1)), int(m.group(2))
    assert lab.exec_in(200, f"kill -0 {pid}").returncode == 0  # it really runs, and that is the one to stop
    lab.exec_in(200, f"kill -TERM -- -{pgid}")
    return pid, pgid


@pytest.mark.lab
def test_cockpit_attempt_on_a_full_journal_says_so_in_one_line_and_prints_the_job(lab, lab_config):
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", "0", "--interval", "0.05")})
    path = cfg.journal_path
    path.parent.mkdir(mode=0o700)
    os.symlink("/dev/full", path)
    r = _cockpit("attempt", "-c", str(cfg.path), "--note", "full disk")
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "attempt 1: passed" in r.stdout, r.stdout
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"cockpit: config error: cannot write the journal {path}: No space left on device;"), r.stderr
    assert f"fix: free space on the disk that holds {path.parent}" in r.stderr
    pid, pgid = _job_from_stderr(lab, r.stderr)
    assert f"pid {pid}, process group {pgid}" in r.stdout  # the launch stage says it too


@pytest.mark.lab
@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0, reason="needs unshare -m and root to mount a tmpfs")
def test_cockpit_attempt_on_a_read_only_file_system(lab, lab_config, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", "0", "--interval", "0.05")},
                     journal={"path": str(ro / "journal.jsonl")})
    mount = ("unshare", "-m", "sh", "-c", f"mount -t tmpfs -o ro,size=64k tmpfs {ro} && exec \"$@\"", "sh")
    r = _cockpit("attempt", "-c", str(cfg.path), "--note", "read-only", "--json", prefix=mount)
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Read-only file system" in r.stderr and "remount the file system" in r.stderr
    import json

    out = json.loads(r.stdout)
    assert out["outcome"] == "passed" and out["journal_error"]["layer"] == "config" and out["journal_error"]["key"] == "journal.path"
    _job_from_stderr(lab, r.stderr)


async def test_the_tui_says_when_the_journal_cannot_be_written_and_when_it_is_again(tmp_path):
    from cockpit.core.config import parse_config
    from cockpit.ui.app import create_app
    from cockpit.ui.panes import StatusLine
    from tests.test_share import screen_text
    from tests.test_ui_support import wait_for

    path = tmp_path / "j" / "journal.jsonl"
    cfg = parse_config(f'[target]\nname = "lab"\ntransport = "local"\n[job]\nworkdir = "{tmp_path}"\ncommand = "/bin/true"\n'
                       f'log = "{tmp_path}/train-{{attempt}}.log"\n[journal]\npath = "{path}"\n[gpu]\nenabled = false\n'
                       '[ui]\nrefresh_interval = 0.2\n')
    Journal(path).finish_attempt(Journal(path).start_attempt("before", "lab"), Outcome.FAILED, layer=Layer.APP)
    app = create_app(cfg)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        status = app.query_one(StatusLine)
        saved = _make_full(path)
        app.engine.journal.record(1, "note", text="written while the disk was full")  # the engine's own write path
        await wait_for(pilot, lambda: "[config] journal: cannot write the journal" in status.render().plain, what="the status line")
        await wait_for(pilot, lambda: "journal not written" in screen_text(app), what="the toast")
        assert "free space on the disk" in screen_text(app)
        _make_writable(path, saved)
        await wait_for(pilot, lambda: "journal:" not in status.render().plain, what="the retry at a history refresh")
        assert "written while the disk was full" in path.read_text()
        await wait_for(pilot, lambda: "the journal is written again" in screen_text(app), what="the all-clear toast")
