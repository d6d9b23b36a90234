"""Metrics kept beside the journal (issue 15): written as the job logs, bounded, private, read back
by a new engine after a restart (which then goes on without counting a line twice); the
history's ``metrics`` object (JSON and Markdown) and ``cockpit compare``.

Real jobs on this machine (local transport), real engines, the real CLI entry point."""

from __future__ import annotations

import json
import math
import stat
import sys
from pathlib import Path

import pytest

from cockpit.cli import main
from cockpit.core.actions.jobstate import LogScan
from cockpit.core.config import load_config
from cockpit.core.engine import Engine
from cockpit.core.journal import Journal
from cockpit.core.layers import Outcome
from cockpit.core.metrics import MetricsStore, load_attempt, metrics_path
from tests.lab import await_for

TRAIN = """\
import math, sys, time
N = int(sys.argv[1]) if len(sys.argv) > 1 else 60
STEP_S = 0.05  # the job's own pace
for step in range(1, N + 1):
    print(f"step {step} loss {LOSS:.4f} lr 3e-4", flush=True)
    time.sleep(STEP_S)
print("done", flush=True)
time.sleep(KEEP)
"""


def project(tmp: Path, *, loss: str = "2.0 * math.exp(-step / 30) + 0.5", steps: int = 60, keep: float = 30, extra: str = "") -> Path:
    src, ws = tmp / "src", tmp / "ws"
    src.mkdir(exist_ok=True)
    ws.mkdir(exist_ok=True)
    (src / "train.py").write_text(TRAIN.replace("LOSS", loss).replace("KEEP", str(keep)))
    cfg = tmp / "cockpit.toml"
    cfg.write_text(f"""
[target]
name = "lab"
transport = "local"
[job]
workdir = "{ws}"
command = "{sys.executable} train.py {steps}"
log = "{ws}/train-{{attempt}}.log"
progress_pattern = '^step'
stop_timeout = 1
strays = "leave"
[deploy]
source = "{src}"
dest = "{ws}"
[cache]
paths = []
[journal]
path = "{tmp}/j/journal.jsonl"
[gpu]
enabled = false
[verify]
settle = 0.5
fate_interval = 0.3
{extra}
""")
    return cfg


def loss_at(step: int) -> float:
    return round(2.0 * math.exp(-step / 30) + 0.5, 4)


async def test_metrics_survive_a_restart_and_the_next_engine_goes_on(tmp_path, engines):
    cfg = load_config(project(tmp_path))
    eng = engines(cfg)
    res = await eng.attempt("baseline", follow=False)
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    seen = eng.metrics.get(res.attempt)
    n1 = seen.series["loss"].count
    assert n1 >= 5 and seen.series["loss"].xs == [float(i) for i in range(1, n1 + 1)]
    path = metrics_path(cfg.journal_path.parent, res.attempt)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    job = eng.job
    await eng.close()  # cockpit goes away; the job runs on

    again = Engine(cfg)
    try:
        before = again.metrics.get(res.attempt)
        assert before.series["loss"].xs[:n1] == seen.series["loss"].xs[:n1]  # read back from the file
        again.resume_following()  # a new follower reads the log from its start
        await await_for(lambda: (m := again.metrics.get(res.attempt)) is not None and m.series["loss"].count >= 60, 20,
                        "all 60 steps through the new engine's follower")
        s = again.metrics.get(res.attempt).series["loss"]
        assert s.count == 60 and s.xs == [float(i) for i in range(1, 61)]  # none twice, none missing
        assert s.ys == [loss_at(i) for i in range(1, 61)]
        assert s.best == (60.0, loss_at(60)) and s.goal == "min"
        third, since = load_attempt(path, res.attempt)
        assert third.series["loss"].xs == s.xs and third.series["lr"].ys == [3e-4] * 60
    finally:
        again.set_job(job, res.attempt)
        await again.run_action("stop")
        await again.close()


def test_the_file_stays_small_however_long_the_job_logs(tmp_path):
    store = MetricsStore(tmp_path / "j")
    store_cap = store.cap
    rec = store.recorder(7)
    scan = LogScan(None)
    scan.metrics = rec
    n = 3 * store_cap + 500
    for chunk in range(0, n, 250):  # one read of the log = one write
        scan.feed("".join(f"step {i} loss {1 / i:.6f} tok/s 5100\n" for i in range(chunk + 1, min(n, chunk + 250) + 1)).encode())
    path = metrics_path(tmp_path / "j", 7)
    lines = path.read_bytes().splitlines()
    assert len(lines) <= store_cap + 1 and json.loads(lines[0]).get("snap")  # rewritten as one snapshot, then appended
    back, _ = load_attempt(path, 7)
    s = back.series["loss"]
    assert s.count == n and len(s.xs) <= store_cap + 1 and s.last == (float(n), round(1 / n, 6))
    assert back.series["tok/s"].best == (1.0, 5100.0)


def test_a_torn_or_foreign_line_in_the_file_loses_nothing_else(tmp_path):
    store = MetricsStore(tmp_path)
    rec = store.recorder(1)
    scan = LogScan(None)
    scan.metrics = rec
    scan.feed(b"step 1 loss 2.0\nstep 2 loss 1.5\n")
    path = metrics_path(tmp_path, 1)
    with open(path, "ab") as f:
        f.write(b'{"n": 9, "t": "x"}\n[1, 2]\n{"n": "10", "t": 5, "v": {"loss": 1}}\n{"n": 11, "t": 5, "v": {"lo')  # torn
    scan.feed(b"step 3 loss 1.0\n")
    back, _ = load_attempt(path, 1)
    assert back.series["loss"].xs == [1.0, 2.0, 3.0] and back.series["loss"].ys == [2.0, 1.5, 1.0]


def test_a_secret_shaped_metric_name_is_never_kept(tmp_path):
    store = MetricsStore(tmp_path)
    rec = store.recorder(1)
    rec.line(1, "step 1 loss 2.0 hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 5")
    rec.batch_done()  # the read is done: its readings are applied and written
    assert list(rec.metrics.series) == ["loss"]
    assert b"hf_" not in metrics_path(tmp_path, 1).read_bytes()


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


async def test_history_and_compare_show_the_metrics(tmp_path, engines, capsys):
    path = project(tmp_path, steps=40, keep=0.1)
    cfg = load_config(path)
    eng = engines(cfg)
    r1 = await eng.attempt("baseline", follow=True)
    await await_for(lambda: (m := eng.metrics.get(r1.attempt)) is not None and m.series["loss"].count == 40, 20, "attempt 1's 40 steps")
    # the second attempt changes the loss: compare shows the change and the difference at matching steps
    (tmp_path / "src" / "train.py").write_text(TRAIN.replace("LOSS", "2.0 * math.exp(-step / 30) + 0.4").replace("KEEP", "0.1"))
    r2 = await eng.attempt("lower the floor", follow=True)
    await await_for(lambda: (m := eng.metrics.get(r2.attempt)) is not None and m.series["loss"].count == 40, 20, "attempt 2's 40 steps")

    code, out = run_cli(capsys, "history", "--config", str(path), "--json")
    rows = json.loads(out)
    assert code == 0 and [r["attempt"] for r in rows] == [1, 2]
    m = rows[0]["metrics"]
    assert m["last_step"] == 40 and m["values"]["loss"] == {"last": loss_at(40), "at": 40, "best": loss_at(40), "best_at": 40,
                                                           "goal": "min", "count": 40}
    assert m["values"]["lr"] == {"last": 3e-4, "at": 40, "goal": None, "count": 40}
    assert 5 < m["steps_per_s"] < 25  # ~20 steps/s written, read in batches
    assert rows[0]["fate"] is not None and rows[0]["outcome"] == "passed"  # the fields it had stay

    code, md = run_cli(capsys, "history", "--config", str(path), "--markdown")
    assert code == 0 and f"- **Metrics:** loss {loss_at(40)} · lr 3.00e-04 · step 40 · " in md

    code, out = run_cli(capsys, "compare", "--config", str(path), "1", "2")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["#1", "#2"]
    assert any(ln.split()[:2] == ["hypothesis", "baseline"] and "lower the floor" in ln for ln in lines)
    assert "code #1 → #2: 1 file, +1 −1: train.py" in out
    table = lines[lines.index("loss at matching steps") + 2:]
    assert [ln.split() for ln in table] == [["1", "2.4344", "2.3344", "-0.1"], ["11", "1.8861", "1.7861", "-0.1"],
                                            ["21", "1.4932", "1.3932", "-0.1"], ["30", "1.2358", "1.1358", "-0.1"],
                                            ["40", "1.0272", "0.9272", "-0.1"]]

    code, out = run_cli(capsys, "compare", "--config", str(path), "1", "2", "--json", "--metric", "lr", "--steps", "2")
    d = json.loads(out)
    assert code == 0 and d["changes"]["files"] == ["train.py"] and d["common_metrics"] == ["loss", "lr"]
    assert d["matching"] == {"lr": [{"step": 1, "a": 3e-4, "b": 3e-4, "delta": 0, "exact": True},
                                    {"step": 40, "a": 3e-4, "b": 3e-4, "delta": 0, "exact": True}]}
    assert d["a"]["metrics"]["values"]["loss"]["last"] == loss_at(40) and d["b"]["story"].startswith("passed")

    code = main(["compare", "--config", str(path), "1", "9"])
    assert code == 2 and "no attempt 9" in capsys.readouterr().err


@pytest.mark.parametrize("what", ["history", "compare"])
def test_attempts_without_metrics_read_as_none(tmp_path, capsys, what):
    path = project(tmp_path)
    j = Journal(load_config(path).journal_path)
    for note in ("a", "b"):
        j.finish_attempt(j.start_attempt(note, "lab"), Outcome.FAILED)
    if what == "history":
        code, out = run_cli(capsys, "history", "--config", str(path), "--json")
        assert code == 0 and [r["metrics"] for r in json.loads(out)] == [None, None]
    else:
        code, out = run_cli(capsys, "compare", "--config", str(path), "1", "2")
        assert code == 0 and out.rstrip().endswith("no metric logged by both attempts")


def test_compare_says_what_ended_a_job_after_its_verdict_where_the_verdict_saw_no_error(tmp_path, capsys):
    from cockpit.core.fate_record import FATE_EVENT, Fate

    path = project(tmp_path)
    j = Journal(load_config(path).journal_path)
    for note in ("passed, then died", "passed, still running"):
        j.finish_attempt(j.start_attempt(note, "lab"), Outcome.PASSED)
    j.record(1, FATE_EVENT, **Fate("died", "gpu", "the training loop raised RuntimeError: CUDA illegal memory access", 0.0, 12.0,
                                   "step 40 loss 1.0").to_dict())
    j.record(2, FATE_EVENT, **Fate("running", None, "python3 pid 7 S, 4 threads", 0.0, 3.0, "step 3 loss 2.0").to_dict())
    code, out = run_cli(capsys, "compare", "--config", str(path), "1", "2")
    assert code == 0
    [row] = [ln for ln in out.splitlines() if ln.startswith("first error")]
    assert row.split()[2:7] == ["after", "the", "verdict:", "the", "training"], row  # the cell is cut to its column
    code, out = run_cli(capsys, "compare", "--config", str(path), "1", "2", "--json")
    d = json.loads(out)
    assert d["a"]["first_error"] is None and d["a"]["fate_error"].startswith("the training loop raised") and d["b"]["fate_error"] is None
