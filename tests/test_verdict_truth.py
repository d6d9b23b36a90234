"""Verdicts that stay true (issue 9), against the lab: real sshd, emulated pct, real processes.

Each of these failed on the code before the fix:

1. drafter threads die with the FX error while the main loop prints steps → ``failed/app``, in
   every ordering of progress lines and tracebacks, however the lines interleave;
2. ``verify`` after the job was SIGKILLed says so (it judges now);
3. a passed attempt is followed to its end: its fate is journalled, its outcome kept;
4. a fresh target (workdir created by the first deploy) is not ``untested``;
5. a copy of the job left by another journal cannot leak its exit status into this attempt, and
   it is shown (and stopped when asked) before the launch.
"""

from __future__ import annotations

import time

import pytest

from cockpit.core.actions.base import ActionContext
from cockpit.core.actions.job import launch
from cockpit.core.actions.verify import verify
from cockpit.core.engine import Engine
from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome, Status
from cockpit.core.status import collect_status
from tests.lab import await_for
from tests.lab.runs import fate_of

pytestmark = pytest.mark.lab


def job(lab, *args):
    return lab.jobsim_command(*[str(a) for a in args])


# -- 1. the seed's bug: threads die while the main loop goes on ------------------------------------

ORDERINGS = {
    # the drafters die before the first step line, then steps follow for a while
    "before": ["--crash-at", 0, "--keep-stepping", 1.0],
    # a few steps, the drafters die, more steps
    "between": ["--crash-at", 3, "--keep-stepping", 1.0],
    # progress first; the drafters die inside the settle window and the process never exits
    "after": ["--crash-at", 8, "--keep-stepping", -1],
    # tracebacks and step lines interleaved mid-line (unlocked writes from four threads)
    "interleaved": ["--crash-at", 2, "--keep-stepping", 1.0, "--interleave"],
}


@pytest.mark.parametrize("ordering", list(ORDERINGS))
async def test_threads_dying_while_steps_go_on_is_failed_app_every_time(lab, lab_config, engines, ordering):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--threads", 3, "--crash", "fx",
                                         *ORDERINGS[ordering])})
    eng = engines(cfg)
    res = await eng.attempt(f"fx, {ordering}")  # once through the whole attempt …
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.APP, res.verdict.summary()
    fs = res.verdict.failed_stage
    assert "FX traced a dynamo-optimized function" in fs.detail and "died" in fs.detail, fs.detail
    assert fs.data["dead_threads"], fs.data
    ctx = ActionContext(cfg, eng.transport)
    for i in range(4):  # … and four more launches judged by verify alone (5 runs per ordering)
        v, rec = await launch(ctx, 100 + i)
        assert v.ok, v.summary()
        eng.set_job(rec, None)
        out = await verify(ctx, rec)
        assert out.layer is Layer.APP and out.failed_stage is not None, (i, out.summary())
        # judged while the steps go on (progress, settled), or, on a machine slow enough that the
        # job's last step (1 s after the deaths) is past, at its exit: the same failure either way
        assert out.failed_stage.name in ("progress", "settled", "alive"), out.failed_stage.name
        assert "FX traced" in out.failed_stage.detail


async def test_healthy_job_passes_only_after_the_settle_window(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05)}, verify={"settle": 1.5})
    t0 = time.monotonic()
    res = await engines(cfg).attempt("healthy")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    settled = [s for s in res.verdict.stages if s.name == "verify: settled"][0]
    assert settled.status is Status.OK and "1.5s after the first progress" in settled.detail
    assert res.timings["verify"] >= 1.5 and time.monotonic() - t0 >= 1.5


async def test_ignored_signatures_do_not_fail_the_verdict(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--threads", 3, "--crash", "fx",
                                         "--crash-at", 2, "--keep-stepping", -1)},
                     verify={"ignore_signatures": ["python-traceback", "fx-dynamo-race"]})
    res = await engines(cfg).attempt("known noise")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()


@pytest.mark.parametrize("severity,outcome", [("warning", Outcome.PASSED), ("error", Outcome.FAILED)])
async def test_user_signature_severity_decides(lab, lab_config, engines, severity, outcome):
    from cockpit.core.config import load_config

    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05)})
    cfg.path.write_text(cfg.path.read_text() + f"""
[[signatures]]
pattern = "^step 3 "
layer = "app"
label = "step three is cursed"
severity = "{severity}"
id = "cursed"
""")
    res = await engines(load_config(cfg.path)).attempt(f"severity {severity}")
    assert res.outcome is outcome, res.verdict.summary()
    if outcome is Outcome.FAILED:
        assert "step three is cursed" in res.verdict.failed_stage.detail


# -- 2. verify judges now ---------------------------------------------------------------------------

async def _leader_pid(eng: Engine) -> int:
    """The job's own main process: below the supervisor, past the wrapping ``sh -c`` (killing
    that shell alone would leave the job running under it: a launcher that exited)."""
    pid = eng.job.pid

    async def child_of(p: int) -> list[str]:
        return (await eng.transport.run(f"cat /proc/{p}/task/*/children", timeout=5)).text.split()

    while True:
        kids = await await_for(lambda p=pid: child_of(p), 4, f"a child process of {pid}")
        pid = int(kids[0])
        comm = (await eng.transport.run(f"cat /proc/{pid}/comm", timeout=5)).text.strip()
        if comm not in ("sh", "dash", "bash"):
            return pid


async def test_verify_after_sigkill_reports_the_death_and_records_the_fate(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05)})
    eng = engines(cfg)
    res = await eng.attempt("will be killed")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    ok = await eng.run_action("verify")
    assert ok.ok and "settled" in [s.name for s in ok.stages]
    pid = await _leader_pid(eng)
    lab.exec_in(200, f"kill -9 {pid}")
    v = await eng.run_action("verify")
    assert not v.ok, v.summary()
    alive = [s for s in v.stages if s.name == "alive"][0]
    assert alive.status is Status.FAIL and alive.layer is Layer.PROCESS
    assert "killed by signal 9 (SIGKILL)" in alive.detail and "after launch" in alive.detail and "last progress: step" in alive.detail
    f = fate_of(cfg, res.attempt)
    assert f is not None and f.state == "died" and f.layer == "process"
    assert Journal(cfg.journal_path).get(res.attempt).outcome is Outcome.PASSED  # the outcome is never rewritten


async def test_verify_with_nothing_launched_is_untested(lab, lab_config, engines):
    from cockpit.core.layers import outcome_of

    v = await engines(lab_config()).run_action("verify")
    assert not v.ok and "nothing launched" in v.failed_stage.detail
    assert outcome_of(v) is Outcome.UNTESTED


async def test_verify_judges_the_job_not_its_supervisor(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--threads", 2)})
    eng = engines(cfg)
    res = await eng.attempt("threads")
    assert res.outcome is Outcome.PASSED
    alive = [s for s in res.verdict.stages if s.name == "verify: alive"][0]
    assert "python3" in alive.detail and "3 threads" in alive.detail, alive.detail  # not "sh … 1 threads"


# -- 3. fate ----------------------------------------------------------------------------------------

async def test_fate_died_with_traceback_after_passing(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--crash", "exc", "--crash-at", 40)})
    eng = engines(cfg)
    res = await eng.attempt("late crash")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(lambda: (fate_of(cfg, res.attempt) or None) and fate_of(cfg, res.attempt).state == "died", timeout=10)
    f = fate_of(cfg, res.attempt)
    assert f.layer == "app" and "loss is NaN" in f.cause and f.after_s is not None and f.after_s > 1.0
    assert f.last_progress and f.last_progress.startswith("step ")
    rows = Journal(cfg.journal_path).attempts()
    assert rows[-1].outcome is Outcome.PASSED


async def test_fate_finished(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 40, "--interval", 0.05)})
    eng = engines(cfg)
    res = await eng.attempt("short run")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(lambda: (fate_of(cfg, res.attempt) or None) and fate_of(cfg, res.attempt).state == "finished", timeout=10)


async def test_fate_stopped_by_cockpit(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05)})
    eng = engines(cfg)
    res = await eng.attempt("to stop")
    v = await eng.run_action("stop")
    assert v.ok, v.summary()
    f = fate_of(cfg, res.attempt)
    assert f is not None and f.state == "stopped" and "by cockpit" in f.cause


async def test_fate_vanished_when_the_container_is_rebooted_under_the_job(lab, lab_config, engines):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05)})
    eng = engines(cfg)
    res = await eng.attempt("reboot under me")
    assert res.outcome is Outcome.PASSED
    lab.pct("reboot", 200, check=True)  # not by cockpit
    await await_for(lambda: (fate_of(cfg, res.attempt) or None) and fate_of(cfg, res.attempt).final, timeout=20)
    f = fate_of(cfg, res.attempt)
    assert f.state == "vanished" and f.layer == "host", f


async def test_headless_status_reconciles_after_the_tui_closed(lab, lab_config):
    cfg = lab_config(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--crash", "exc", "--crash-at", 60)})
    eng = Engine(cfg)
    res = await eng.attempt("passes, then dies with nobody watching", follow=False)
    await eng.close()  # the TUI is closed: nobody follows the job
    assert res.outcome is Outcome.PASSED
    assert fate_of(cfg, res.attempt).state == "running"
    log_path = res.job.log_path
    await await_for(lambda: "loss is NaN" in lab.exec_in(200, f"cat {log_path}").stdout, timeout=15, interval=0.2)
    report = await collect_status(cfg, quick=True)
    la = report["latest_attempt"]
    assert la["outcome"] == "passed" and la["fate"]["state"] == "died" and la["fate"]["layer"] == "app"
    assert fate_of(cfg, res.attempt).state == "died"


# -- 4. fresh target --------------------------------------------------------------------------------

async def test_first_attempt_on_a_fresh_target_is_not_untested(lab, lab_config, engines):
    fresh = f"{lab.workspace()}/fresh-{time.time_ns()}/project"
    cfg = lab_config(job={"workdir": fresh, "command": job(lab, "--steps", 0, "--interval", 0.05)},
                     deploy={"dest": fresh})
    report = await collect_status(cfg, quick=True)
    wd = [s for s in report["verdict"]["stages"] if s["name"] == "workdir exists"][0]
    assert report["ok"] and wd["status"] == "skipped" and "deploy creates it" in wd["detail"]
    res = await engines(cfg).attempt("first ever")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()


async def test_a_workdir_that_can_never_exist_is_still_a_container_failure(lab, lab_config, engines):
    cfg = lab_config(job={"workdir": "/proc/nope/work"}, deploy={"dest": "/proc/nope/work"})
    res = await engines(cfg).attempt("impossible")
    assert res.outcome is Outcome.UNTESTED and res.verdict.layer is Layer.CONTAINER, res.verdict.summary()


# -- 5. one launch, one set of files; strays ---------------------------------------------------------

async def test_a_stray_from_another_journal_cannot_leak_its_exit_status(lab, lab_config, tmp_path, engines):
    # each copy runs until the test creates its go-file (named by its process group), then exits 0
    lab.exec_in(200, f"rm -f {lab.workspace()}/go-*")
    command = job(lab, "--steps", 1, "--interval", 0.1, "--go-file", f"{lab.workspace()}/go-{{pgid}}")
    cfg_a = lab_config(job={"command": command}, journal={"path": str(tmp_path / "a" / "journal.jsonl")})
    cfg_b = lab_config(job={"command": command, "strays": "leave"}, journal={"path": str(tmp_path / "b" / "journal.jsonl")})
    a = engines(cfg_a)
    res_a = await a.attempt("other journal's job", follow=False)
    assert res_a.outcome is Outcome.PASSED
    b = engines(cfg_b)
    res_b = await b.attempt("mine")  # same log path (attempt 1 in both journals), other job still running
    strays = [s for s in res_b.verdict.stages if s.name == "stop: strays"][0]
    assert "1 copy of the job that cockpit did not start" in strays.detail and "left running" in strays.detail
    assert res_a.job.pid_file != res_b.job.pid_file and res_a.job.exit_file != res_b.job.exit_file
    # A's job exits 0 while B's is still young: B's verdict and fate are B's own
    assert res_a.job.pgid is not None and res_a.job.pgid != res_b.job.pgid
    lab.exec_in(200, f"touch {lab.workspace()}/go-{res_a.job.pgid}")
    await await_for(lambda: lab.exec_in(200, f"cat {res_a.job.exit_file} 2>/dev/null").stdout.strip() != "", timeout=20, interval=0.2)
    v = await b.run_action("verify")
    alive = [s for s in v.stages if s.name == "alive"][0]
    assert alive.status is Status.OK and "running" in alive.detail, v.summary()


async def test_strays_are_stopped_when_asked(lab, lab_config, tmp_path, engines):
    command = job(lab, "--steps", 0, "--interval", 0.1)
    cfg_a = lab_config(job={"command": command}, journal={"path": str(tmp_path / "a" / "journal.jsonl")})
    cfg_b = lab_config(job={"command": command, "strays": "stop"}, journal={"path": str(tmp_path / "b" / "journal.jsonl")})
    a = engines(cfg_a)
    res_a = await a.attempt("left behind", follow=False)
    a.job = None  # forget it, as a deleted .cockpit/ would
    res_b = await engines(cfg_b).attempt("clean slate")
    strays = [s for s in res_b.verdict.stages if s.name == "stop: strays"][0]
    assert strays.status is Status.OK and strays.detail.startswith("stopped 1 copy"), strays.detail
    gone = lab.exec_in(200, f"cat /proc/{res_a.job.pid}/stat 2>/dev/null").stdout
    assert gone.strip() == "" or ") Z " in gone
