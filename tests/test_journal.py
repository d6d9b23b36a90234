"""The attempt journal: append-only JSON Lines, crash recovery, Markdown post-mortem.

Real files in tmp_path; the crash tests use real child processes killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cockpit.core import journal as journal_mod
from cockpit.core.journal import (
    ATTEMPT_FINISHED,
    ATTEMPT_INTERRUPTED,
    AttemptRecord,
    Journal,
    default_journal_path,
    proc_start_time,
    render_markdown,
)
from cockpit.core.layers import Evidence, Layer, Outcome, Stage, Status, Verdict
from tests.lab.util import wait_for

REPO = Path(__file__).resolve().parents[1]

CODE = {
    "git_commit": "4092e570316bcb02aa11bb22cc33dd44ee55ff66",
    "dirty_hash": "d1e2f3a4b5c6",
    "dirty": True,
    "files": ["train.py", "drafter.py"],
    "source": "/home/me/proj",
}


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def file_has(path: Path, needle: str):
    return lambda: path.exists() and needle in path.read_text(encoding="utf-8", errors="replace")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ---------------------------------------------------------------------------------------------


def test_default_path_is_beside_config(tmp_path: Path) -> None:
    cfg = tmp_path / "cockpit.toml"
    assert default_journal_path(cfg) == tmp_path.resolve() / ".cockpit" / "journal.jsonl"
    assert Journal.for_config(cfg).path == default_journal_path(cfg)


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / ".cockpit" / "journal.jsonl"  # parent directory is created on first write
    j = Journal(path)
    a = j.start_attempt("serialise the first compile", "pve-200", code_version=CODE, log_path="/workspace/train_tl3.log")
    assert a == 1
    j.record_diff(a, ["train.py"], added=12, removed=3, diff_path="/tmp/a1.diff")
    j.record_stage(a, "deploy", Stage("copy", Status.OK, Layer.CONFIG, "2 files", duration_s=0.4))
    j.record_stage(a, "clear-cache", Stage("rm inductor", Status.OK, Layer.CONTAINER, "1.2 GiB"))
    j.record_job(a, {"unit": None, "pid": 4242, "start_time": 99, "pgid": 4242, "log_path": "/workspace/train_tl3.log"})
    v = Verdict("verify")
    v.add(Stage("spawned", Status.OK, Layer.PROCESS))
    v.add(Stage("progress", Status.FAIL, Layer.APP, "RuntimeError: FX", evidence=Evidence("tail log", 0, "boom")))
    v.finish()
    j.record_verdict(a, "verify", v)
    fe = {"layer": "app", "label": "fx-race", "lines": ["Traceback (most recent call last):", "RuntimeError: Detected FX"]}
    caches = [{"path": "/tmp/torchinductor_root", "bytes": 1_300_000_000}]
    j.finish_attempt(a, Outcome.FAILED, layer=Layer.APP, summary="fx race still there", first_error=fe, caches=caches)

    # Every line is one valid event with the envelope.
    evs = [json.loads(ln) for ln in lines(path)]
    assert [e["event"] for e in evs] == ["attempt_started", "diff", "stage", "stage", "job", "verdict", "attempt_finished"]
    for e in evs:
        assert e["v"] == 1 and e["attempt"] == 1 and isinstance(e["ts"], float)
    start = evs[0]
    assert start["cockpit_pid"] == os.getpid() and start["cockpit_host"] and start["target"] == "pve-200"
    assert evs[2]["stage"]["name"] == "copy" and evs[5]["verdict"]["layer"] == "app"

    for jj in (j, Journal(path)):  # same view from the writer and from a fresh reader
        (rec,) = jj.attempts()
        assert rec.attempt == 1 and rec.note == "serialise the first compile"
        assert rec.outcome is Outcome.FAILED and rec.layer is Layer.APP
        assert rec.code_version == CODE and rec.log_path == "/workspace/train_tl3.log"
        assert rec.job == {"unit": None, "pid": 4242, "start_time": 99, "pgid": 4242, "log_path": "/workspace/train_tl3.log"}
        assert [(s.action, s.stage.name, s.stage.status) for s in rec.stages] == [
            ("deploy", "copy", Status.OK),
            ("clear-cache", "rm inductor", Status.OK),
            ("verify", "spawned", Status.OK),
            ("verify", "progress", Status.FAIL),
        ]
        assert rec.stages[-1].stage.evidence == Evidence("tail log", 0, "boom")
        assert len(rec.verdicts) == 1 and rec.verdicts[0].layer is Layer.APP
        assert rec.first_error == fe and rec.caches == caches
        assert rec.diff == {"files": ["train.py"], "added": 12, "removed": 3, "diff_path": "/tmp/a1.diff"}
        assert rec.started_at is not None and rec.finished_at >= rec.started_at
        assert rec.duration_s is not None and rec.duration_s >= 0
        assert not rec.open and jj.open_attempts() == [] and jj.bad_lines == 0
        assert jj.get(1).note == rec.note and jj.get(2) is None

    d = Journal(path).attempts()[0].to_dict()
    json.dumps([d])  # what `cockpit history --json` prints
    for key in ("attempt", "note", "started_at", "finished_at", "duration_s", "outcome", "layer", "summary",
                "code_version", "log_path", "job", "first_error", "caches", "stages"):
        assert key in d
    assert d["outcome"] == "failed" and d["layer"] == "app"
    assert d["stages"][0] == {"action": "deploy", **Stage.from_dict(evs[2]["stage"]).to_dict()}


def test_verdict_replaces_the_live_stage_events_of_its_action(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.jsonl")
    a = j.start_attempt("h", "t")
    j.record_stage(a, "deploy", Stage("copy", Status.OK, Layer.CONFIG))
    j.record_stage(a, "launch", Stage("spawned", Status.OK, Layer.PROCESS))
    j.record_stage(a, "stop", Stage("late", Status.OK, Layer.PROCESS))
    v = Verdict("launch")
    v.add(Stage("spawned", Status.OK, Layer.PROCESS))
    v.add(Stage("alive", Status.FAIL, Layer.PROCESS, "zombie"))
    v.not_reached([("log created", Layer.PROCESS)])
    j.record_verdict(a, "launch", v)
    j.record_verdict(a, "verify", Verdict("verify", [Stage("progress", Status.OK, Layer.APP)]))
    rec = j.get(a)
    assert [(s.action, s.stage.name) for s in rec.stages] == [
        ("deploy", "copy"),
        ("launch", "spawned"),
        ("launch", "alive"),
        ("launch", "log created"),
        ("stop", "late"),
        ("verify", "progress"),
    ]
    assert rec.open and rec.outcome is Outcome.RUNNING


def test_ids_increase_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    assert j.next_id() == 1
    assert [j.start_attempt(f"h{i}", "t") for i in range(3)] == [1, 2, 3]
    j2 = Journal(path)
    assert j2.start_attempt("after reopen", "t") == 4
    assert j.start_attempt("the old instance sees it too", "t") == 5
    # next id = max seen + 1, whatever event carried it
    with path.open("a") as f:
        f.write(json.dumps({"v": 1, "ts": 1.0, "event": "stage", "attempt": 41, "action": "x"}) + "\n")
    assert Journal(path).start_attempt("h", "t") == 42


def test_torn_last_line_is_tolerated_and_sealed(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    a = j.start_attempt("h", "t")
    j.record_stage(a, "deploy", Stage("copy", Status.OK, Layer.CONFIG))
    full = json.dumps({"v": 1, "ts": time.time(), "event": "stage", "attempt": a, "action": "launch",
                       "stage": Stage("spawned", Status.OK, Layer.PROCESS).to_dict()})
    with path.open("a") as f:
        f.write(full[: len(full) // 2])  # a writer died mid-line

    r = Journal(path)
    (rec,) = r.attempts()
    assert [s.stage.name for s in rec.stages] == ["copy"]
    assert r.bad_lines == 1

    # The next append seals the fragment with a newline first: the new event is intact.
    j.record_stage(a, "launch", Stage("alive", Status.OK, Layer.PROCESS))
    j.finish_attempt(a, "passed")
    raw = lines(path)
    assert raw[2] == full[: len(full) // 2]
    assert json.loads(raw[3])["stage"]["name"] == "alive"
    for jj in (r, Journal(path)):
        (rec,) = jj.attempts()
        assert [s.stage.name for s in rec.stages] == ["copy", "alive"]
        assert rec.outcome is Outcome.PASSED
        assert jj.bad_lines == 1
    assert j.start_attempt("h2", "t") == 2


def test_garbage_lines_are_counted_and_unknown_events_kept(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    a = j.start_attempt("h", "t")
    with path.open("ab") as f:
        f.write(b"not json at all\n")
        f.write(b"[1, 2, 3]\n")  # JSON, but not an event object
        f.write(b"\xff\xfe\x00garbage\n")  # not UTF-8
        f.write(b"\n   \n")  # blank lines are not garbage
        f.write(json.dumps({"v": 2, "ts": 5.0, "event": "mystery", "attempt": a, "x": 1}).encode() + b"\n")
        f.write(json.dumps({"event": "stage", "attempt": a, "stage": {"name": "no status"}}).encode() + b"\n")
        f.write(json.dumps({"event": "attempt_finished", "attempt": a}).encode() + b"\n")  # fields missing
        f.write(json.dumps({"event": "note-without-attempt"}).encode() + b"\n")
    r = Journal(path)
    (rec,) = r.attempts()
    assert r.bad_lines == 3
    kinds = [e.get("event") for e in r.events()]
    assert "mystery" in kinds and "note-without-attempt" in kinds
    assert [e["event"] for e in rec.extra] == ["mystery", "stage"]
    assert rec.stages == [] and not rec.open
    assert rec.outcome == "unknown" and rec.layer is None and rec.first_error is None
    json.dumps(rec.to_dict())
    render_markdown([rec])  # renders without crashing on sparse data


def test_every_durable_write_fsyncs_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "j.jsonl"
    synced: list[str] = []
    real = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else "?")
        real(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    j = Journal(path)
    a = j.start_attempt("h", "t")
    j.record_stage(a, "deploy", Stage("copy", Status.OK, Layer.CONFIG))
    assert len(lines(path)) == 2 and len([p for p in synced if p in (str(path), "?")]) == 1  # a stage: written, not fsynced
    j.record_job(a, {"pid": 1})
    j.finish_attempt(a, Outcome.PASSED)
    on_file = [p for p in synced if p in (str(path), "?")]
    assert len(on_file) == 3  # one fsync per durable line (start, job, end); each puts the stages before it on disk
    assert len(lines(path)) == 4


def test_writer_api_validation(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.jsonl")
    a = j.start_attempt("h", "t")
    with pytest.raises(ValueError):
        j.record(a, "custom", ts=1.0)  # envelope keys are reserved
    with pytest.raises(ValueError):
        j.record(0, "custom")
    with pytest.raises(ValueError):
        j.finish_attempt(a, "great")
    ev = j.record(a, "custom", anything=[1, 2], path=Path("/x"))
    assert ev["event"] == "custom" and ev["path"] == "/x"
    assert any(e.get("event") == "custom" for e in Journal(j.path).events())


def test_concurrent_writers_get_unique_ids(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    script = textwrap.dedent(
        """
        import sys
        from cockpit.core.journal import Journal
        j = Journal(sys.argv[1])
        for i in range(15):
            a = j.start_attempt("w" + sys.argv[2], "t")
            j.record(a, "custom", i=i)
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path), str(n)], env=child_env())
        for n in range(4)
    ]
    for p in procs:
        assert p.wait(timeout=60) == 0
    j = Journal(path)
    recs = j.attempts()
    assert [r.attempt for r in recs] == list(range(1, 61))
    assert all(len(r.events) == 2 for r in recs)
    assert j.bad_lines == 0 and len(lines(path)) == 120


CHILD = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from cockpit.core.journal import Journal, proc_start_time
    from cockpit.core.layers import Layer, Stage, Status

    j = Journal(sys.argv[1])
    a = j.start_attempt("patch is_fx_symbolic_tracing", "pve-200", log_path="/workspace/train_tl3.log")
    j.record_stage(a, "deploy", Stage("copy", Status.OK, Layer.CONFIG, "2 files"))
    if sys.argv[2] == "job":
        job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                               start_new_session=True, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        j.record_job(a, {"unit": None, "pid": job.pid, "start_time": proc_start_time(job.pid),
                         "pgid": os.getpgid(job.pid), "log_path": "/workspace/train_tl3.log"})
        j.record_stage(a, "launch", Stage("spawned", Status.OK, Layer.PROCESS, f"pid {job.pid}"))
    j.record(a, "child_ready")
    time.sleep(300)  # mid-attempt, until killed
    """
)


def spawn_writer(path: Path, mode: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), mode], env=child_env())
    try:
        wait_for(file_has(path, '"child_ready"'), 20, "the child to write its attempt")
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_crash_mid_attempt_is_recovered_as_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    child = spawn_writer(path, "job")
    job_pgid = None
    try:
        j = Journal(path)
        (open_rec,) = j.open_attempts()
        job_pgid = open_rec.job["pgid"]
        assert open_rec.cockpit_pid == child.pid
        assert j.recover() == []  # the writer is alive: leave its attempt alone

        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)

        (rec,) = j.recover()
        assert rec.attempt == 1 and rec.outcome is Outcome.INTERRUPTED and not rec.open
        assert rec.interrupted_reason == "cockpit stopped before a verdict"
        assert "last stage seen: launch/spawned (ok)" in rec.summary
        assert [s.stage.name for s in rec.stages] == ["copy", "spawned"]
        # The job outlived its cockpit; the recorded identity lets a new cockpit re-attach / stop it.
        job = rec.job
        assert job["log_path"] == "/workspace/train_tl3.log"
        assert proc_start_time(job["pid"]) == job["start_time"]

        raw = [json.loads(ln) for ln in lines(path)]
        assert [e["event"] for e in raw[-2:]] == [ATTEMPT_INTERRUPTED, ATTEMPT_FINISHED]
        assert raw[-2]["writer_pid"] == child.pid and "no longer running" in raw[-2]["why"]
        assert raw[-1]["outcome"] == "interrupted"
        assert Journal(path).recover() == [] and Journal(path).open_attempts() == []
        assert Journal(path).start_attempt("next", "pve-200") == 2
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if job_pgid:
            try:
                os.killpg(job_pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_a_live_writers_open_attempt_is_not_recovered(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    child = spawn_writer(path, "nojob")
    try:
        j = Journal(path)
        mine = j.start_attempt("this process's own attempt", "t")
        assert j.recover() == []
        assert [r.attempt for r in j.open_attempts()] == [1, mine]
        assert j.recover(force=True)[0].attempt == 1  # force closes even live writers' attempts
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_recover_detects_pid_reuse_zombies_reboots_and_other_hosts(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    me = os.getpid()
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    wait_for(lambda: (journal_mod._read_stat(zombie.pid) or ("?",))[0] == "Z", 20, "the child to become a zombie")
    try:
        host = journal_mod._hostname()
        starts = {
            1: {"cockpit_pid": me, "cockpit_host": host, "cockpit_start_time": proc_start_time(me) + 1},  # reused
            2: {"cockpit_pid": zombie.pid, "cockpit_host": host},  # dead, unreaped
            3: {"cockpit_pid": me, "cockpit_host": host, "boot_id": "another-boot"},  # rebooted since
            4: {"cockpit_pid": me, "cockpit_host": "some-other-machine"},  # cannot tell
            5: {"cockpit_pid": me, "cockpit_host": host, "cockpit_start_time": proc_start_time(me)},  # alive
        }
        with path.open("w") as f:
            for aid, w in starts.items():
                f.write(json.dumps({"v": 1, "ts": 100.0, "event": "attempt_started", "attempt": aid, "note": "n", **w}) + "\n")
            f.write(json.dumps({"v": 1, "ts": 160.0, "event": "stage", "attempt": 6, "action": "deploy",
                                "stage": Stage("copy", Status.OK, Layer.CONFIG).to_dict()}) + "\n")  # start torn away
        j = Journal(path)
        got = {r.attempt: r for r in j.recover("test")}
        assert sorted(got) == [1, 2, 3, 6]
        assert got[1].duration_s == 0.0 and got[1].summary == "interrupted: test"
        why = {e["attempt"]: e["why"] for e in j.events() if e["event"] == ATTEMPT_INTERRUPTED}
        assert "another process" in why[1] and "no longer running" in why[2] and "rebooted" in why[3]
        assert [r.attempt for r in j.open_attempts()] == [4, 5]
    finally:
        zombie.wait()


def test_a_late_real_outcome_beats_a_recovered_interrupted(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.jsonl")
    a = j.start_attempt("h", "t")
    j.finish_attempt(a, Outcome.INTERRUPTED)
    j.finish_attempt(a, Outcome.PASSED, summary="marker seen")
    j.finish_attempt(a, Outcome.FAILED)  # after a real outcome, later finishes are ignored
    rec = j.get(a)
    assert rec.outcome is Outcome.PASSED and rec.summary == "marker seen"


def test_reader_sees_appends_from_another_instance_and_a_replaced_file(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    reader, writer = Journal(path), Journal(path)
    assert reader.attempts() == [] and list(reader.events()) == []
    writer.start_attempt("one", "t")
    assert [r.note for r in reader.attempts()] == ["one"]
    writer.start_attempt("two", "t")
    assert [r.note for r in reader.attempts()] == ["one", "two"]
    path.unlink()
    Journal(path).start_attempt("fresh", "t")
    assert [r.note for r in reader.attempts()] == ["fresh"]


# --------------------------------------------------------------------------------------------- markdown


def _history(tmp_path: Path) -> list[AttemptRecord]:
    j = Journal(tmp_path / "j.jsonl")
    a1 = j.start_attempt("per-thread _exec_lock | serialise first compile", "pve-200", code_version=CODE,
                         log_path="/workspace/train_tl.log")
    j.record_stage(a1, "deploy", Stage("copy", Status.OK, Layer.CONFIG, "2 files", duration_s=0.8))
    j.record_stage(a1, "verify", Stage("progress", Status.FAIL, Layer.APP, "traceback in log", duration_s=95))
    j.finish_attempt(
        a1, Outcome.FAILED, layer=Layer.APP, summary="drafter-1 crashed",
        first_error={"layer": "app", "label": "fx-race", "path": "/workspace/train_tl.log", "line_no": 812,
                     "lines": ["Traceback (most recent call last):", "  File \"x.py\", line 1",
                               "RuntimeError: Detected that you are using FX | to trace\na dynamo-optimized function"]},
        caches=[{"path": "/tmp/torchinductor_root", "bytes": 3 * 1024**3}],
    )
    a2 = j.start_attempt("patch is_fx_symbolic_tracing", "pve-200", code_version={**CODE, "dirty": False})
    j.record_stage(a2, "deploy", Stage("connect", Status.FAIL, Layer.SSH, "connection refused"))
    j.finish_attempt(a2, Outcome.UNTESTED, layer=Layer.SSH, summary="ssh refused")
    a3 = j.start_attempt("module shim", "pve-200")
    j.finish_attempt(a3, Outcome.INTERRUPTED)
    j.start_attempt("still going\nsecond line", "pve-200")
    return j.attempts()


def test_markdown_post_mortem(tmp_path: Path) -> None:
    md = render_markdown(_history(tmp_path))
    assert md.startswith("# cockpit attempt history\n")
    assert "Outcomes:" in md  # the legend
    assert "**failed** — the code ran and failed (app)" in md
    assert "**untested** — the fix never ran (ssh failed)" in md
    assert "interrupted — cockpit stopped before a verdict" in md
    assert "running — no verdict yet" in md
    assert "4 attempts" in md and "1 failed, 1 untested, 1 interrupted, 1 running" in md

    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and ln[2:3].isdigit()]
    assert len(rows) == 4
    for row in rows:  # every row has exactly the 9 columns: escaped pipes do not split cells
        assert row.replace("\\|", "").count("|") == 10
    r1 = rows[0]
    assert "per-thread \\_exec_lock \\| serialise first compile" in r1  # Markdown-escaped: the _ could open emphasis
    first_error_cell = r1.split(" | ")[7]
    assert first_error_cell == "RuntimeError: Detected that you are using FX \\| to trace"  # exception line
    assert "`4092e57+dirty`" in r1 and "1 path, 3.0 GiB" in r1
    assert "`4092e57`" in rows[1] and "+dirty" not in rows[1]
    assert "still going ⏎ second line" in rows[3]  # no raw newline inside a row
    started = time.strftime("%Y-%m-%dT%H:", time.gmtime())
    assert started in r1 and r1.split(" | ")[1].endswith("Z")

    # Per-attempt sections: stages and the first error in a fenced block.
    assert "## Attempt 1: failed — the code ran and failed (app)" in md
    assert "| deploy | copy | ok | config | 2 files | 0.8s |" in md
    assert "| verify | progress | **fail** | app | traceback in log | 1m 35s |" in md
    assert "`/workspace/train_tl.log` line 812" in md
    fence = md.index("```text\nTraceback (most recent call last):")
    assert "a dynamo-optimized function\n```" in md[fence:]
    assert "`/tmp/torchinductor_root` (3.0 GiB)" in md
    assert render_markdown([], title="empty").startswith("# empty")


def test_core_journal_imports_no_ui_libraries() -> None:
    code = "import sys, cockpit.core.journal; bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]; assert not bad, bad"
    subprocess.run([sys.executable, "-c", code], check=True, env=child_env())
