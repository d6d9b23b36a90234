"""Attempt-on-save: the source watcher (real files, real watchfiles) and the attempt loop.

No fixed sleeps: every wait is a condition polled under a deadline.  "Exactly one attempt" is
proven with a barrier: after the attempts under test, a sentinel file is saved; the next attempt
must be the sentinel's alone, so nothing else was triggered in between.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from cockpit.core.engine import Busy
from cockpit.core.loop import (
    AttemptLoop,
    LoopConfig,
    NoteCounter,
    SourceWatcher,
    deployed_ok,
    is_excluded,
    loop_config,
    strip_counter,
)
from tests.lab.util import await_for as until

ROOT = Path(__file__).resolve().parents[1]


def save(path: Path, text: str) -> float:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return time.monotonic()


class FakeEngine:
    """Stands in for the lead's Engine: ``attempt(note)`` records calls; can block or be busy."""

    def __init__(self, *, gate: asyncio.Event | None = None, busy: int = 0, deploy_fails: bool = False) -> None:
        self.calls: list[tuple[str, float]] = []
        self.gate = gate
        self.busy = busy
        self.busy_raised = 0
        self.deploy_fails = deploy_fails

    async def attempt(self, note: str, *, wait: bool = False, trigger: str = "manual"):
        if self.busy > 0:
            self.busy -= 1
            self.busy_raised += 1
            raise Busy("the target is busy: pid 4242 is running attempt since 10:00:00")
        self.calls.append((note, time.monotonic()))
        if self.gate is not None:
            await self.gate.wait()
        status = "fail" if self.deploy_fails else "ok"
        stages = [SimpleNamespace(name="deploy: source", status=SimpleNamespace(value="ok")),
                  SimpleNamespace(name="deploy: upload", status=SimpleNamespace(value=status))]
        return SimpleNamespace(attempt=len(self.calls), outcome="passed", verdict=SimpleNamespace(stages=stages))


class Harness:
    def __init__(self, src: Path, engine: FakeEngine, *, debounce: float = 0.3, exclude=(".git", "__pycache__", "*.pyc"), **kw) -> None:
        self.src = src
        self.engine = engine
        self.activity: list[list[str]] = []
        #: when each activity was seen (monotonic): what the debounce measures its quiet window from
        self.activity_at: list[float] = []
        self.watcher = SourceWatcher(src, list(exclude), debounce=debounce, on_activity=self._activity)
        self.changes = []
        self.starts: list[tuple[str, dict]] = []
        self.verdicts = []
        self.loop = AttemptLoop(engine, self.watcher, on_change=self.changes.append,
                                on_attempt_start=lambda n, f: self.starts.append((n, f)),
                                on_verdict=self.verdicts.append, **kw)
        self.task: asyncio.Task | None = None

    def _activity(self, names: list[str]) -> None:
        self.activity.append(names)
        self.activity_at.append(time.monotonic())

    async def __aenter__(self):
        await self.watcher.start()
        self.task = asyncio.create_task(self.loop.run())
        return self

    async def __aexit__(self, *exc):
        self.loop.stop()
        if self.engine.gate is not None:
            self.engine.gate.set()
        await asyncio.wait_for(self.task, 10)
        await self.watcher.close()

    async def barrier(self, n_before: int) -> None:
        """Save a sentinel; the next attempt must contain it alone (nothing else was pending)."""
        save(self.src / "zz_sentinel.txt", f"barrier {time.monotonic()}\n")
        await until(lambda: len(self.starts) > n_before, 10, "the sentinel's attempt")
        assert len(self.starts) == n_before + 1, self.starts
        assert list(self.starts[-1][1]) == ["zz_sentinel.txt"], self.starts[-1]


@pytest.fixture
def src(tmp_path: Path) -> Path:
    s = tmp_path / "src"
    s.mkdir()
    (s / "train.py").write_text("import drafter\n\nfor step in range(10):\n    print('step', step)\n")
    (s / "drafter.py").write_text("def draft():\n    return 1\n")
    return s


# -- the watcher --------------------------------------------------------------------------------


async def test_save_triggers_exactly_one_attempt_after_default_debounce(src: Path):
    eng = FakeEngine()
    async with Harness(src, eng, debounce=LoopConfig().debounce) as h:
        t_save = save(src / "train.py", "import drafter\n\nfor step in range(20):\n    print('step', step)\n")
        await until(lambda: eng.calls, 10, "the attempt")
        latency = eng.calls[0][1] - t_save
        print(f"\nsave → attempt start: {latency * 1000:.0f} ms (debounce 1000 ms); "
              f"detection {(h.changes[0].first_seen - t_save) * 1000:.0f} ms")
        assert 1.0 <= latency < 2.0, latency
        assert h.starts[0][1] == {"train.py": "modified"}
        await until(lambda: h.verdicts, 5, "the verdict")
        assert h.watcher.pending == {}
        await h.barrier(1)
    assert len(eng.calls) == 2


async def test_burst_of_saves_triggers_one_attempt(src: Path):
    # each save after the previous one was seen: five separate detections.  On a quiet machine they
    # come well inside the debounce window: one attempt, after the last.  On a loaded one a save may
    # be seen more than the window after the previous one: that is two bursts, so the assertion is
    # on the window itself (an attempt starts only after a quiet window) with a 10 % margin each way
    debounce = 0.6
    eng = FakeEngine()
    async with Harness(src, eng, debounce=debounce) as h:
        for i in range(5):
            n = len(h.activity)
            save(src / "drafter.py", f"def draft():\n    return {i + 2}\n")
            await until(lambda n=n: len(h.activity) > n, 5, f"save {i} to be seen")
        await until(lambda: any(at > h.activity_at[-1] for _, at in eng.calls), 10, "the attempt after the last save")
        seen = list(h.activity_at)
        assert len(seen) >= 5
        for _, at in eng.calls:  # never in the middle of a burst
            assert at - max(t for t in seen if t < at) >= 0.9 * debounce, (at, seen)
        gaps = [b - a for a, b in zip(seen, seen[1:], strict=False)]
        assert 1 + sum(g >= 1.1 * debounce for g in gaps) <= len(eng.calls) <= 1 + sum(g >= 0.9 * debounce for g in gaps), (gaps, eng.calls)
        assert h.starts[0][1] == {"drafter.py": "modified"}
        await h.barrier(len(eng.calls))


async def test_save_during_attempt_queues_exactly_one_more(src: Path):
    gate = asyncio.Event()
    eng = FakeEngine(gate=gate)
    async with Harness(src, eng, debounce=0.2) as h:
        save(src / "train.py", "v1\n")
        await until(lambda: eng.calls, 10, "attempt 1")
        for i, name in enumerate(["drafter.py", "train.py", "new_module.py"]):
            n = len(h.changes)
            save(src / name, f"during attempt 1: {i}\n")
            await until(lambda n=n: len(h.changes) > n, 10, f"save {name} to settle")
        assert h.loop.queued and len(eng.calls) == 1
        gate.clear()
        eng.gate = None
        gate.set()
        await until(lambda: len(eng.calls) == 2, 10, "the queued attempt")
        assert h.starts[1][1] == {"drafter.py": "modified", "train.py": "modified", "new_module.py": "added"}
        await h.barrier(2)
    assert len(eng.calls) == 3


async def test_excluded_ignored_and_editor_files_trigger_nothing(tmp_path: Path):
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    (repo / "train.py").write_text("print(1)\n")
    eng = FakeEngine()
    exclude = [".git", "__pycache__", "*.pyc", "data", "*.ckpt", "sub/cache"]
    noise = ["run.log", "build/out.bin", "data/d.csv", "m.ckpt", "sub/cache/c.txt", "__pycache__/m.cpython-311.pyc",
             ".train.py.swp", "train.py~", "sub/deep/x.log"]
    for rel in noise:  # directories exist first: each save below is one plain file event
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
    async with Harness(repo, eng, exclude=exclude, debounce=0.2) as h:
        assert h.watcher.git_dir is not None
        for rel in noise:
            save(repo / rel, "noise\n")
        await until(lambda: h.watcher.stats["ignored"] >= len(noise), 10, "every ignored save to be seen")
        assert h.watcher.stats["git_calls"] >= 1
        save(repo / "train.py", "print(2)\n")
        await until(lambda: eng.calls, 10, "the attempt")
        assert h.starts[0][1] == {"train.py": "modified"}
        assert all(set(cs.latest) == {"train.py"} for cs in h.changes)
        await h.barrier(1)


async def test_new_moved_and_deleted_directories(src: Path, tmp_path: Path):
    eng = FakeEngine()
    outside = tmp_path / "outside" / "plugin"
    save(outside / "a.py", "a\n")
    save(outside / "inner" / "b.py", "b\n")
    save(src / "old" / "gone.py", "gone\n")
    save(src / "old" / "deeper" / "gone2.py", "gone\n")
    async with Harness(src, eng, debounce=0.3) as h:
        save(src / "pkg" / "sub" / "deep" / "new.py", "new\n")  # mkdir -p and write at once
        os.rename(outside, src / "plugin")  # a directory moved in
        shutil.rmtree(src / "old")
        await until(lambda: eng.calls, 10, "the attempt")
        assert h.starts[0][1] == {"pkg/sub/deep/new.py": "added", "plugin/a.py": "added", "plugin/inner/b.py": "added",
                                  "old/gone.py": "removed", "old/deeper/gone2.py": "removed"}
        await h.barrier(1)


async def test_touch_and_identical_rewrites_trigger_nothing_and_an_undone_edit_drops_out(src: Path):
    eng = FakeEngine()
    async with Harness(src, eng, debounce=0.3) as h:
        before = h.watcher.stats["unchanged"]
        os.utime(src / "train.py")
        (src / "drafter.py").write_bytes((src / "drafter.py").read_bytes())
        await until(lambda: h.watcher.stats["unchanged"] >= before + 2, 10, "the no-op saves to be seen")
        old = (src / "drafter.py").read_text()
        save(src / "drafter.py", "changed\n")
        await until(lambda: h.watcher.pending, 5, "the edit")
        save(src / "drafter.py", old)  # undone before it settled
        await until(lambda: h.changes, 10, "the burst to settle")
        assert not h.changes[0] and h.changes[0].latest == ("drafter.py",)
        await h.barrier(0)


async def test_busy_target_is_retried_then_runs_once(src: Path):
    eng = FakeEngine(busy=2)
    busy = []
    async with Harness(src, eng, debounce=0.2, busy_retry=0.05, on_busy=lambda e, w: busy.append((str(e), w))) as h:
        save(src / "train.py", "v2\n")
        await until(lambda: eng.calls, 10, "the attempt after the target freed up")
        assert eng.busy_raised == 2 and len(busy) == 2 and "pid 4242" in busy[0][0]
        await h.barrier(1)


async def test_busy_timeout_reports_and_keeps_changes_pending(src: Path):
    eng = FakeEngine(busy=1000)
    errors = []
    async with Harness(src, eng, debounce=0.2, busy_retry=0.05, busy_timeout=0.2, on_error=errors.append) as h:
        save(src / "train.py", "v2\n")
        await until(lambda: errors, 10, "giving up")
        assert isinstance(errors[0], Busy) and not eng.calls
        assert h.watcher.pending == {"train.py": "modified"}


async def test_failed_deploy_keeps_changes_pending(src: Path):
    eng = FakeEngine(deploy_fails=True)
    async with Harness(src, eng, debounce=0.2) as h:
        save(src / "train.py", "v2\n")
        await until(lambda: h.verdicts, 10, "the verdict")
        assert h.watcher.pending == {"train.py": "modified"}
        eng.deploy_fails = False
        save(src / "drafter.py", "v2\n")
        await until(lambda: len(h.verdicts) == 2, 10, "the second verdict")
        assert h.starts[1][1] == {"train.py": "modified", "drafter.py": "modified"}
        assert h.watcher.pending == {}


async def test_deployed_manifest_reconciles_saves_made_during_the_attempt(src: Path):
    """A save that landed before deploy read the files is not pending afterwards."""
    import hashlib

    gate = asyncio.Event()
    eng = FakeEngine(gate=gate)
    deployed: dict[str, str] = {}
    async with Harness(src, eng, debounce=0.2, manifest_for=lambda res: deployed) as h:
        save(src / "train.py", "v2\n")
        await until(lambda: eng.calls, 10, "the attempt")
        n = len(h.changes)
        save(src / "drafter.py", "saved while deploy was packing\n")
        await until(lambda: len(h.changes) > n, 10, "the save to settle")
        deployed.update({rel: hashlib.sha256(p.read_bytes()).hexdigest() for rel, p in
                         ((p.name, p) for p in src.iterdir())})
        gate.set()
        await until(lambda: h.verdicts, 10, "the verdict")
        assert h.watcher.pending == {}
        await until(lambda: h.loop.state == "idle", 5, "the loop to go idle")
        await h.barrier(1)  # the queued attempt was dropped: nothing differed from what was deployed


async def test_note_provider_and_counter(src: Path, tmp_path: Path):
    from cockpit.core.journal import Journal

    j = Journal(tmp_path / "j" / "journal.jsonl")
    for note in ("serialise the first compile", "serialise the first compile (#2)"):
        aid = j.start_attempt(note, "t")
        j.finish_attempt(aid, "failed")
    c = NoteCounter(journal=j)
    assert c.base == "serialise the first compile"
    assert c.next(["train.py"]) == "serialise the first compile (#3)"
    assert NoteCounter("new idea", journal=j).next() == "new idea"
    assert NoteCounter("", template="{last_note} (#{n})").next(["a.py", "b.py"]) == "on save: a.py, b.py"
    assert strip_counter("x (#12)") == "x"

    asked = []

    async def ask(files, default):
        asked.append((dict(files), default))
        return None if len(asked) == 1 else "typed by the user"

    eng = FakeEngine()
    async with Harness(src, eng, debounce=0.2, note=ask) as h:
        save(src / "train.py", "v2\n")
        await until(lambda: asked, 10, "the note prompt")
        assert not eng.calls and h.watcher.pending == {"train.py": "modified"}  # skipped: still pending
        save(src / "drafter.py", "v2\n")
        await until(lambda: eng.calls, 10, "the attempt")
        assert eng.calls[0][0] == "typed by the user"


async def test_disabled_loop_reports_changes_and_manual_attempt_marks_them_deployed(src: Path):
    eng = FakeEngine()
    async with Harness(src, eng, debounce=0.2, enabled=False) as h:
        save(src / "train.py", "v2\n")
        await until(lambda: h.changes, 10, "the change to settle")
        assert h.changes[0].pending == {"train.py": "modified"} and not eng.calls
        res = await h.loop.attempt_now("manual hypothesis")
        assert res.attempt == 1 and eng.calls[0][0] == "manual hypothesis"
        assert h.watcher.pending == {}
        h.loop.enabled = True
        await h.barrier(1)


async def test_cockpits_own_writes_inside_the_source_never_trigger(tmp_path: Path, src: Path):
    from cockpit.core.config import load_config
    from cockpit.core.loop import watcher_for

    cfg_path = local_config(tmp_path, src)
    text = cfg_path.read_text().replace(str(tmp_path / "j" / "journal.jsonl"), str(src / "state" / "journal.jsonl"))
    text = text.replace(f'dest = "{tmp_path / "ws"}"', f'dest = "{src / "deployed"}"')
    cfg_path.write_text(text)
    cfg = load_config(cfg_path)
    (src / "state").mkdir()
    (src / "deployed").mkdir()
    w = watcher_for(cfg, debounce=0.2)
    seen = []
    async with w:
        n = w.stats["ignored"]
        save(src / "state" / "journal.jsonl", "{}\n")
        save(src / "deployed" / "train.py", "copy\n")
        await until(lambda: w.stats["ignored"] >= n + 2, 10, "cockpit's own writes to be seen")
        save(src / "train.py", "edit\n")
        async for cs in w:
            seen.append(cs)
            break
    assert seen[0].pending == {"train.py": "modified"}


def test_exclude_semantics_match_collect_files(tmp_path: Path):
    from cockpit.core.actions.deploy import collect_files

    root = tmp_path / "tree"
    rels = ["a.py", "b.pyc", "pkg/__init__.py", "pkg/__pycache__/x.pyc", "pkg/data/big.bin", "data/top.csv",
            "logs/run.log", "x/y/z.txt", "x/y/keep.md", ".cockpit/journal.jsonl", "notes.tmp", "deep/a/b/c.ckpt"]
    for r in rels:
        save(root / r, r)
    for pats in ([".git", "__pycache__", "*.pyc", ".cockpit", ".venv"], ["data"], ["pkg/data"], ["x/y"], ["x/y/"],
                 ["*.log", "*.tmp"], ["deep/a"], ["*/b"], ["*.ckpt", "logs"], []):
        deployed = set(collect_files(root, pats))
        watched = {r for r in rels if not is_excluded(r, pats)}
        assert watched == deployed, pats


def test_deployed_ok_and_loop_config():
    ok = SimpleNamespace(verdict=SimpleNamespace(stages=[SimpleNamespace(name="deploy: source", status=SimpleNamespace(value="ok"))]))
    failed = SimpleNamespace(verdict=SimpleNamespace(stages=[SimpleNamespace(name="connect: ssh", status=SimpleNamespace(value="fail"))]))
    assert deployed_ok(ok) and not deployed_ok(failed)
    assert loop_config(SimpleNamespace()) == LoopConfig()
    from cockpit.core.config import ConfigError
    from cockpit.core.config.coerce import parse_section

    lc = parse_section(None, "loop", LoopConfig, {"attempt_on_save": True, "debounce": 2})
    assert lc.attempt_on_save and lc.debounce == 2.0
    with pytest.raises(ConfigError) as e:
        parse_section(None, "loop", LoopConfig, {"note_template": "{hypothesis}"})
    assert e.value.key == "loop.note_template"


# -- the real engine on a local target ----------------------------------------------------------


def local_config(tmp_path: Path, src: Path, debounce: float | None = None) -> Path:
    cfg = tmp_path / "cockpit.toml"
    cfg.write_text(f"""
[target]
name = "watch-test"
transport = "local"
runtime = "none"

[job]
workdir = "{tmp_path / 'ws'}"
command = "sh -c 'echo step 1; sleep 30'"
log = "{tmp_path / 'logs'}/train-{{attempt}}.log"
launcher = "setsid"
progress_pattern = "^step"
startup_timeout = 20.0
stop_timeout = 2.0

[deploy]
source = "{src}"
dest = "{tmp_path / 'ws'}"

[cache]
paths = ["{tmp_path / 'cache'}"]

[gpu]
enabled = false

[journal]
path = "{tmp_path / 'j' / 'journal.jsonl'}"

[verify]
settle = 0.5
""")
    (tmp_path / "ws").mkdir(exist_ok=True)
    return cfg


async def _stop_job(cfg_path: Path) -> None:
    from cockpit.core.config import load_config
    from cockpit.core.engine import Engine

    eng = Engine(load_config(cfg_path))
    try:
        await eng.run_action("stop", wait=True)
    finally:
        await eng.close()


async def test_real_engine_attempt_on_save_with_recorded_diff(tmp_path: Path, src: Path):
    from cockpit.core.changes import read_diff, record_attempt_changes
    from cockpit.core.config import load_config
    from cockpit.core.engine import Engine
    from cockpit.core.layers import Outcome

    cfg = load_config(local_config(tmp_path, src))
    engine = Engine(cfg)
    diffs = []

    def after(res):  # stands in for the engine calling record_attempt_changes after deploy
        diffs.append(record_attempt_changes(engine.journal, res.attempt, cfg.deploy_source, cfg.deploy.exclude, max_bytes=200_000))

    watcher = SourceWatcher(cfg.deploy_source, cfg.deploy.exclude, debounce=0.3)
    results = []
    loop = AttemptLoop(engine, watcher, notes=NoteCounter("watch test"), on_verdict=lambda r: (after(r), results.append(r)))
    await watcher.start()
    task = asyncio.create_task(loop.run())
    try:
        wall_save = time.time()
        save(src / "drafter.py", "def draft():\n    return 2\n")
        await until(lambda: results, 30, "attempt 1's verdict")
        r1 = results[0]
        assert r1.outcome is Outcome.PASSED, r1.verdict.summary()
        assert (tmp_path / "ws" / "drafter.py").read_text() == "def draft():\n    return 2\n"
        assert loop.latencies[0]["from_last_change"] >= 0.3
        started = engine.journal.get(r1.attempt).started_at
        assert 0.3 <= started - wall_save < 1.5
        print(f"\nreal engine: save → attempt started in the journal {(started - wall_save) * 1000:.0f} ms (debounce 300 ms); "
              f"attempt took {r1.timings['total']:.2f}s")
        save(src / "drafter.py", "def draft():\n    return 3\n")
        await until(lambda: len(results) == 2, 30, "attempt 2's verdict")
        r2 = results[1]
        assert r2.outcome is Outcome.PASSED
        assert [a.note for a in engine.journal.attempts()] == ["watch test", "watch test (#2)"]
        rec = engine.journal.get(r2.attempt)
        assert rec.diff["files"] == ["drafter.py"] and (rec.diff["added"], rec.diff["removed"]) == (1, 1)
        text = read_diff(cfg.journal_path.parent, r2.attempt)
        body = [ln for ln in text.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        assert body == ["-    return 2", "+    return 3"]
        assert diffs[0].get("first") and diffs[1]["base"] == r1.attempt
    finally:
        loop.stop()
        await asyncio.wait_for(task, 30)
        await watcher.close()
        await engine.run_action("stop", wait=True)
        await engine.close()


# -- cockpit watch (headless) -------------------------------------------------------------------


def _spawn_watch(cfg: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONUNBUFFERED="1")
    env.pop("TMUX", None)
    return subprocess.Popen([sys.executable, "-m", "cockpit", "watch", "-c", str(cfg), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)


def _read_until(stream, pred, timeout: float, what: str) -> list[str]:
    import selectors

    lines: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out waiting for {what}; got {lines}")
        if sel.select(left):
            line = stream.readline()
            if not line:
                raise AssertionError(f"stream closed waiting for {what}; got {lines}")
            lines.append(line)
            if pred(line):
                return lines


async def test_cockpit_watch_once_json(tmp_path: Path, src: Path):
    cfg = local_config(tmp_path, src)
    p = _spawn_watch(cfg, "--once", "--json", "--debounce", "0.3", "--note", "cli hypothesis")
    try:
        _read_until(p.stderr, lambda ln: "watching" in ln, 20, "the watcher to be ready")
        save(src / "train.py", "print('step 1')\n")
        out = await asyncio.to_thread(p.communicate, timeout=60)
        assert p.returncode == 0, out
        lines = [ln for ln in out[0].splitlines() if ln.strip()]
        assert len(lines) == 1, out
        v = json.loads(lines[0])
        assert v["outcome"] == "passed" and v["changed"] == ["train.py"] and v["note"] == "cli hypothesis"
        assert set(v) >= {"attempt", "outcome", "layer", "summary", "first_error", "changed", "timings"}
        assert v["save_to_start_s"] >= 0.3
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        await _stop_job(cfg)


async def test_cockpit_watch_ctrl_c_exits_130(tmp_path: Path, src: Path):
    cfg = local_config(tmp_path, src)
    p = _spawn_watch(cfg)
    try:
        _read_until(p.stderr, lambda ln: "watching" in ln, 20, "the watcher to be ready")
        p.send_signal(signal.SIGINT)
        await asyncio.to_thread(p.wait, 10)
        assert p.returncode == 130
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


async def test_cockpit_watch_once_times_out_without_change(tmp_path: Path, src: Path):
    cfg = local_config(tmp_path, src)
    p = _spawn_watch(cfg, "--once", "--timeout", "0.5")
    out = await asyncio.to_thread(p.communicate, timeout=30)
    assert p.returncode == 124, out
    assert "no change within" in out[1]


def test_watch_parser_registers(tmp_path: Path):
    import argparse

    from cockpit.cli.args import merge_globals
    from cockpit.cli.watch import add_parser, cmd_watch

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    args = merge_globals(parser.parse_args(["watch", "--once", "--json", "-m", "h"]), parser)
    assert args.func is cmd_watch and args.once and args.json and args.note == "h"
