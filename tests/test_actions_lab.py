"""Actions and attempts against the lab: real sshd, emulated pct with real namespaces.

These replay the seed: the zombie under a non-reaping init, the launch that must outlive its
``pct exec``, the slow start that is pending and not failed, the FX crash that is the code's fault
and the infrastructure failures that mean the fix never ran.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cockpit.core.actions.base import ActionContext
from cockpit.core.actions.job import launch, stop
from cockpit.core.actions.verify import verify
from cockpit.core.config import load_config
from cockpit.core.engine import Busy, Engine
from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome, Status
from tests.lab import await_for, wait_for

pytestmark = pytest.mark.lab


@pytest.fixture
def make_cfg(lab_config):
    return lab_config


def job(lab, *args):
    return lab.jobsim_command(*[str(a) for a in args])


async def test_fx_crash_is_failed_app_with_the_first_error(lab, make_cfg, engines, tmp_path):
    cfg = make_cfg(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--threads", 3, "--crash", "fx", "--crash-at", 1)})
    eng = engines(cfg)
    res = await eng.attempt("serialise first compile")
    assert res.outcome is Outcome.FAILED, res.verdict.summary()
    assert res.verdict.layer is Layer.APP
    assert "FX to symbolically trace a dynamo-optimized function" in (res.first_error or {}).get("label", "") + str(res.first_error)
    names = [s.name for s in res.verdict.stages]
    assert names[:4] == ["connect: ssh reached", "connect: host answers", "connect: target shell answers", "connect: workdir exists"]
    assert "deploy: checksums" in names and "clear-cache: gone" in names and "verify: alive" in names
    rec = Journal(cfg.journal_path).get(res.attempt)
    assert rec.outcome is Outcome.FAILED and rec.note == "serialise first compile"
    assert rec.code_version is not None and rec.job and rec.job["pid"]


async def test_progress_gives_passed(lab, make_cfg, engines):
    cfg = make_cfg()
    res = await engines(cfg).attempt("baseline")
    assert res.outcome is Outcome.PASSED, [(s.name, s.status.value, s.detail) for s in res.verdict.stages]
    prog = [s for s in res.verdict.stages if s.name == "verify: progress"][0]
    assert prog.status is Status.OK and "step" in prog.detail


async def test_stopped_container_is_untested_host(lab, make_cfg, engines):
    lab.pct("stop", 200, check=True)
    res = await engines(make_cfg()).attempt("never runs")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.HOST)
    assert all(s.status is Status.NOT_REACHED for s in res.verdict.stages if s.name.startswith(("deploy", "launch", "verify")))


async def test_sshd_down_is_untested_ssh(lab, make_cfg, engines):
    cfg = make_cfg()
    lab.stop()
    res = await engines(cfg).attempt("never runs")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.SSH)
    assert "refused" in res.verdict.failed_stage.detail


async def test_missing_interpreter_is_untested_container(lab, make_cfg, engines):
    res = await engines(make_cfg(job={"command": "/usr/bin/python9 train.py"})).attempt("typo in interpreter")
    assert res.outcome is Outcome.UNTESTED, res.verdict.summary()
    assert res.verdict.layer in (Layer.CONTAINER, Layer.PROCESS)
    assert "not found" in res.verdict.failed_stage.detail


async def test_sigkill_without_traceback_is_reported_as_signal_9(lab, make_cfg, engines):
    res = await engines(make_cfg(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--crash", "sigkill", "--crash-at", 1),
                                      "progress_pattern": "^never"})).attempt("oom?")
    assert res.outcome is Outcome.UNTESTED and res.verdict.layer is Layer.PROCESS
    assert "killed by signal 9 (SIGKILL)" in res.verdict.failed_stage.detail


async def test_slow_log_is_pending_then_passed(lab, make_cfg, engines):
    ws = lab.workspace()
    # the job writes its own log (attempt 1's name), and only after 4 s of loading: longer than
    # healthy_after and the SSH keepalive (both 1.5 s here), well inside startup_timeout
    cfg = make_cfg(job={"command": job(lab, "--steps", 0, "--interval", 0.1, "--log", f"{ws}/slow-1.log", "--log-delay", 4),
                        "log": f"{ws}/slow-{{attempt}}.log", "capture_output": False, "startup_timeout": 40, "healthy_after": 1.5},
                   ssh={"keepalive_interval": 1.5})
    eng = engines(cfg)
    ctx = ActionContext(cfg, eng.transport)
    v, rec = await launch(ctx, 1)
    assert v.ok and rec is not None and rec.log_path == f"{ws}/slow-1.log"
    eng.set_job(rec)
    early = await verify(ctx, rec, wait=False)
    statuses = {s.name: s.status for s in early.stages}
    assert statuses["alive"] is Status.OK and statuses["log created"] is Status.PENDING and not early.failed_stage
    t0 = time.monotonic()
    final = await verify(ctx, rec)
    assert final.ok, final.summary()
    assert time.monotonic() - t0 > 2  # it really waited for the log instead of failing


async def test_launch_survives_the_pct_exec_that_started_it(lab, make_cfg, engines):
    cfg = make_cfg()
    eng = engines(cfg)
    ctx = ActionContext(cfg, eng.transport)
    v, rec = await launch(ctx, 7)
    assert v.ok
    eng.set_job(rec)
    await eng.transport.reset_session()  # the pct exec that ran the launch is gone
    await eng.transport.close()
    out = lab.exec_in(200, f"cat /proc/{rec.pid}/stat")
    assert out.returncode == 0 and ") S " in out.stdout or ") R " in out.stdout
    v = await verify(ctx, rec)
    assert v.ok, v.summary()


async def test_zombie_under_non_reaping_init_then_reboot_clears_it(lab, make_cfg, engines):
    lab.add_container(202, reaping_init=False)
    try:
        cfg = make_cfg(target={"container": 202})
        eng = engines(cfg)
        ctx = ActionContext(cfg, eng.transport)
        v, rec = await launch(ctx, 1)
        assert v.ok
        await verify(ctx, rec)
        v = await stop(ctx, rec)
        assert v.layer is Layer.CONTAINER, v.summary()
        detail = v.failed_stage.detail
        assert "zombie" in detail and "parent 1 (sleepy-init)" in detail and "not a known reaping init" in detail
        assert v.failed_stage.data["pid1_reaps"] is False
        eng.job = None
        rv = await eng.run_action("reboot")
        assert rv.ok, rv.summary()
        assert [s.name for s in rv.stages][-1] == "clean process table"
        out = lab.exec_in(202, "cat /proc/[0-9]*/stat")
        assert ") Z " not in out.stdout
    finally:
        lab.remove_container(202)


async def test_one_action_at_a_time(lab, make_cfg, engines):
    cfg = make_cfg(job={"command": job(lab, "--steps", 0, "--interval", 0.1, "--start-delay", 2)})
    a, b = engines(cfg), engines(cfg)
    first = asyncio.ensure_future(a.attempt("first"))
    await await_for(lambda: a.current_action == "attempt", timeout=10)
    with pytest.raises(Busy) as ei:
        await b.attempt("second, other cockpit")  # another engine: the cross-process file lock
    assert "busy" in str(ei.value)
    with pytest.raises(Busy):
        await a.run_action("deploy")  # the same engine
    res = await first
    assert res.outcome is Outcome.PASSED


def test_cli_attempt_and_history(lab, make_cfg, tmp_path):
    make_cfg(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--crash", "fx", "--crash-at", 1)})
    conf = str(tmp_path / "cockpit.toml")
    r = subprocess.run([sys.executable, "-m", "cockpit", "attempt", "--note", "first hypothesis", "--json", "-c", conf],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)
    assert (d["outcome"], d["layer"]) == ("failed", "app")
    r = subprocess.run([sys.executable, "-m", "cockpit", "stop", "--json", "-c", conf], capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1)
    h = subprocess.run([sys.executable, "-m", "cockpit", "history", "--json", "-c", conf], capture_output=True, text=True, timeout=60)
    rows = json.loads(h.stdout)
    assert rows[-1]["note"] == "first hypothesis" and rows[-1]["outcome"] == "failed"
    md = subprocess.run([sys.executable, "-m", "cockpit", "history", "--markdown", "-c", conf], capture_output=True, text=True, timeout=60)
    assert "first hypothesis" in md.stdout and "failed" in md.stdout


def test_journal_survives_kill_9_mid_attempt(lab, make_cfg, tmp_path):
    make_cfg(job={"command": job(lab, "--steps", 0, "--interval", 0.1, "--start-delay", 30), "startup_timeout": 60})
    conf = str(tmp_path / "cockpit.toml")
    cfg = load_config(conf)
    p = subprocess.Popen([sys.executable, "-m", "cockpit", "attempt", "--note", "will be killed", "-c", conf],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        j = Journal(cfg.journal_path)
        wait_for(lambda: any(s.stage.name == "spawn" for a in j.attempts() for s in a.stages), timeout=30)
        assert j.attempts()[-1].job["pid"]  # the job was recorded no later than its spawn stage
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    async def next_start():
        eng = Engine(cfg)  # the next start closes the open attempt
        try:
            rec = Journal(cfg.journal_path).attempts()[-1]
            assert rec.outcome is Outcome.INTERRUPTED and rec.note == "will be killed"
            assert eng.job is not None and eng.job.pid == rec.job["pid"]  # re-attached to its job
            v = await eng.run_action("stop")
            assert v.ok, v.summary()
        finally:
            await eng.close()

    asyncio.run(next_start())


async def test_relaunch_replaces_the_running_job(lab, make_cfg, engines):
    eng = engines(make_cfg())
    first = await eng.attempt("first")
    assert first.outcome is Outcome.PASSED
    old_pid = first.job.pid
    v = await eng.run_action("relaunch")
    assert v.ok, v.summary()
    assert [s.name for s in v.stages if s.name in ("terminate", "spawn", "progress")] == ["terminate", "spawn", "progress"]
    assert eng.job.pid != old_pid
    assert lab.exec_in(200, f"test -e /proc/{old_pid}").returncode != 0  # the old job is gone


async def test_reboot_that_cannot_stop_the_container_is_a_host_failure(lab, make_cfg, engines):
    lab.set_container_option(200, stop_error="container did not stop")
    eng = engines(make_cfg())
    v = await eng.run_action("reboot")
    assert v.layer is Layer.HOST and "container did not stop" in v.failed_stage.detail
    assert [s.status for s in v.stages if s.name in ("running again", "session rebuilt")] == [Status.NOT_REACHED] * 2


async def test_sigkill_with_an_oom_kill_in_the_host_kernel_log_is_the_oom_killer(lab, make_cfg, engines):
    lab.add_kernel_message("python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0")
    lab.add_kernel_message("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=ns,mems_allowed=0,oom_memcg=/lxc/200,"
                           "task_memcg=/lxc/200/ns,task=python3,pid=91452,uid=0")
    lab.add_kernel_message("Memory cgroup out of memory: Killed process 91452 (python3) total-vm:187654321kB, anon-rss:131234567kB, "
                           "file-rss:123456kB, shmem-rss:0kB, UID:0 pgtables:260000kB oom_score_adj:0")
    res = await engines(make_cfg(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--crash", "sigkill", "--crash-at", 1),
                                      "progress_pattern": "^never"})).attempt("bigger batch")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.CONTAINER), res.verdict.summary()
    detail = res.verdict.failed_stage.detail
    assert "killed by the OOM killer" in detail and "python3" in detail
