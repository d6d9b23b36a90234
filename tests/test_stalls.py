"""Stalls (issue 16), against the lab: a job that stops making progress is not healthy.

Jobs that hang the ways real ones do: two threads deadlocked on two locks taken in opposite
order, a main thread blocked in a read nobody answers, a long pause that then resumes, and a
job whose progress is merely slow (a silent evaluation every N steps) that must never be flagged.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from cockpit.core.fate import latest_fate
from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome
from tests.lab import await_for

pytestmark = pytest.mark.lab

PY_SPY = Path(sysconfig.get_path("scripts")) / "py-spy"


def job(lab, *args):
    return lab.jobsim_command(*[str(a) for a in args])


def fates(cfg, attempt):
    rec = Journal(cfg.journal_path).get(attempt)
    return [ev.get("state") for ev in (rec.events if rec is not None else []) if ev.get("event") == "fate"]


def fate_state(cfg, attempt):
    f = latest_fate(Journal(cfg.journal_path).get(attempt))
    return f.state if f else None


async def test_a_deadlock_after_passing_becomes_stalled_with_both_threads_named(lab, lab_config, engines):
    if not PY_SPY.exists():
        pytest.skip("py-spy is not installed (pip install py-spy; scripts/test installs it)")
    mark = f"{lab.workspace()}/hang.mark"
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--hang", "deadlock", "--hang-at", 40,
                                         "--mark-file", mark), "py_spy": str(PY_SPY)},
                     verify={"stall_after": 1.5})
    eng = engines(cfg)
    res = await eng.attempt("serialise the compile with a lock")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(lambda: fate_state(cfg, res.attempt) == "stalled", 20, "the stalled fate")
    f = latest_fate(Journal(cfg.journal_path).get(res.attempt))
    hung_at = float(lab.exec_in(200, f"cat {mark}").stdout)
    # detected within stall_after plus one follower interval (0.5 s in the lab), with slack for a loaded machine
    assert f.at - hung_at <= 1.5 + 0.5 + 1.5, f.at - hung_at
    assert f.layer == "app" and "no progress for" in f.cause and f.last_progress.startswith("step ")
    # the stall itself dumps the stacks, saved with the attempt
    await await_for(lambda: bool(Journal(cfg.journal_path).get(res.attempt).stacks), 20, "the automatic stack dump")
    assert "drafter-lock-a" in Journal(cfg.journal_path).get(res.attempt).stacks["text"]
    dump = await eng.stacks()
    assert dump is not None and dump.method == "py-spy", dump.note
    names = {t.name for t in dump.threads}
    assert {"drafter-lock-a", "trainer-lock-b"} <= names, names
    frames = "\n".join(f for t in dump.threads for f in t.frames)
    src = (Path(__file__).parent / "lab" / "jobsim.py").read_text().splitlines()
    line_b = next(i for i, x in enumerate(src, 1) if "with b:  # the compile lock" in x)
    line_a = next(i for i, x in enumerate(src, 1) if "with a:  # … and first there" in x)
    assert f"first (jobsim.py:{line_b})" in frames and f"second (jobsim.py:{line_a})" in frames, frames
    assert "drafter-lock-a" in dump.text()
    # stopping a stalled job saves its stacks with the attempt first
    v = await eng.run_action("stop")
    assert v.ok, v.summary()
    rec = Journal(cfg.journal_path).get(res.attempt)
    assert rec.stacks and "trainer-lock-b" in rec.stacks["text"]
    assert latest_fate(rec).state == "stopped"


async def test_progress_that_resumes_clears_the_stall(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--hang", "pause", "--hang-at", 30, "--pause", 4)},
                     verify={"stall_after": 1.5})
    eng = engines(cfg)
    res = await eng.attempt("a long pause")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(lambda: fates(cfg, res.attempt)[-2:] == ["stalled", "running"], 25, "stalled, then running again")
    assert fates(cfg, res.attempt)[0] == "running"


async def test_slow_but_steady_progress_is_never_flagged(lab, lab_config, engines):
    # short steps (0.02 s): each 1 s evaluation is 50 median steps long, yet under the 3 s threshold
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.02, "--eval-every", 10, "--eval-seconds", 1.0)},
                     verify={"stall_after": 3})
    eng = engines(cfg)
    res = await eng.attempt("evaluation every 10 steps")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    log_path = res.job.log_path
    # six silent evaluations of 1 s each, every one within the 3 s threshold
    await await_for(lambda: lab.exec_in(200, f"grep -c '^step' {log_path}").stdout.strip().isdigit()
                    and int(lab.exec_in(200, f"grep -c '^step' {log_path}").stdout) >= 70, 30, "70 steps", interval=0.3)
    assert "stalled" not in fates(cfg, res.attempt), fates(cfg, res.attempt)


async def test_a_stall_inside_the_settle_window_fails_the_attempt(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--hang", "syscall", "--hang-at", 5)},
                     verify={"stall_after": 0.8, "settle": 4})
    eng = engines(cfg)
    res = await eng.attempt("blocked read")
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.APP, res.verdict.summary()
    fs = res.verdict.failed_stage
    assert fs.name == "verify: settled" and "stalled: no progress for" in fs.detail
    assert Journal(cfg.journal_path).get(res.attempt).stacks, "a hang's attempt keeps the threads' stacks"
    # no py-spy configured and none on the target's PATH: the kernel's view, and how to get more
    dump = await eng.stacks()
    assert dump is not None and dump.method in ("proc", "py-spy")
    if dump.method == "proc":
        assert "py-spy" in dump.note
        main = [t for t in dump.threads if t.name.startswith("python")]
        assert main and main[0].state == "S", [(t.name, t.state, t.wchan) for t in dump.threads]


async def test_a_headless_status_sees_a_stall_nobody_watched(lab, lab_config):
    from cockpit.core.engine import Engine
    from cockpit.core.status import collect_status

    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--hang", "deadlock", "--hang-at", 30)},
                     verify={"stall_after": 1.5})
    eng = Engine(cfg)
    res = await eng.attempt("nobody watching", follow=False)
    await eng.close()
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    seen: list[str] = []

    async def status_says_stalled() -> bool:
        report = await collect_status(cfg, quick=True)
        seen.append(report["latest_attempt"]["fate"]["state"])
        return seen[-1] == "stalled"

    # each look is a fresh cockpit: the log's mtime dates the last step
    await await_for(status_says_stalled, 20, lambda: f"status to say stalled (it said {seen})", interval=0.5)
    assert fate_state(cfg, res.attempt) == "stalled"
    stop = Engine(cfg)
    await stop.run_action("stop")
    await stop.close()
