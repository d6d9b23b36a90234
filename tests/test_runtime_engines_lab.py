"""``runtime = "docker"`` and ``"podman"`` against the lab: a real sshd, the engines' CLI emulated
(``tests/lab/bin/docker``) over real namespace containers, the same scenarios as for ``pct``:
running, stopped, missing, the daemon refusing the SSH user, a job crash, a restart.

The line every test draws: a container the engine cannot give is the host's failure and the fix
never ran (``untested``); only the job's own crash is ``app``.
"""

from __future__ import annotations

import pytest

from cockpit.core.layers import Layer, Outcome, Status

pytestmark = pytest.mark.lab

ENGINES = {"docker": 231, "podman": 232}


@pytest.fixture(params=sorted(ENGINES))
def engine(request, lab):
    """(engine, name, ctid): a running container of that engine, removed afterwards."""
    kind = request.param
    ctid = ENGINES[kind]
    name = f"{kind}-trainer"
    lab.add_engine_container(kind, name, ctid)
    yield kind, name, ctid
    lab.set_docker_daemon(None)
    lab.remove_container(ctid)


@pytest.fixture
def engine_cfg(lab, lab_config, engine):
    kind, name, ctid = engine

    def make(**overrides):
        target = {"runtime": kind, "container": name, "ctid": ctid, kind: str(lab.bin_dir / kind), **overrides.pop("target", {})}
        return lab_config(target=target, **overrides)

    return make


def job(lab, *args):
    return lab.jobsim_command(*[str(a) for a in args])


def stages(v):
    return [(s.name, s.status.value, s.detail) for s in v.stages]


async def test_a_running_container_passes_and_the_job_runs_inside_it(lab, engine, engine_cfg, engines):
    kind, name, ctid = engine
    eng = engines(engine_cfg())
    res = await eng.attempt("baseline")
    assert res.outcome is Outcome.PASSED, stages(res.verdict)
    host = next(s for s in res.verdict.stages if s.name == "connect: host answers")
    assert host.detail == f"container {name} is running (its shell answers)"  # no {kind} inspect needed
    shell = next(s for s in res.verdict.stages if s.name == "connect: target shell answers")
    assert name in shell.detail  # the hostname inside is the container's, not the host's
    # the job's pid is the one the container sees: it is in the container's own pid namespace
    assert eng.job is not None
    inside = lab.exec_in(ctid, f"cat /proc/{eng.job.pid}/cmdline")
    assert inside.returncode == 0 and "jobsim" in inside.stdout


async def test_a_stopped_container_is_untested_host_with_the_start_command(lab, engine, engine_cfg, engines):
    kind, name, ctid = engine
    r = lab.ssh(f"{kind} stop {name}")
    assert r.returncode == 0 and r.stdout.strip() == name, r.stderr
    res = await engines(engine_cfg()).attempt("never runs")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.HOST), stages(res.verdict)
    failed = res.verdict.failed_stage
    assert "stopped" in failed.detail and f"{kind} start {name}" in failed.advice
    assert f"{kind} inspect --format" in str(failed.evidence)  # asked through the engine, not pct
    assert all(s.status is Status.NOT_REACHED for s in res.verdict.stages if s.name.startswith(("deploy", "launch", "verify")))


async def test_a_missing_container_is_untested_host_never_app(lab, engine, engine_cfg, engines):
    kind, name, ctid = engine
    res = await engines(engine_cfg(target={"container": "no-such-box"})).attempt("never runs")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.HOST), stages(res.verdict)
    failed = res.verdict.failed_stage
    assert "container missing" in failed.detail
    want = "Error: No such object: no-such-box" if kind == "docker" else 'Error: inspecting object: no such object: "no-such-box"'
    assert want in failed.detail and f"{kind} ps -a" in failed.advice


@pytest.mark.parametrize("engine", ["docker"], indirect=True)  # podman has no daemon socket to refuse
async def test_the_daemon_refusing_the_ssh_user_is_host_with_the_docker_group_fix(lab, engine, engine_cfg, engines):
    lab.set_docker_daemon("denied")
    res = await engines(engine_cfg()).attempt("never runs")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.HOST), stages(res.verdict)
    failed = res.verdict.failed_stage
    assert "permission denied while trying to connect to the Docker daemon socket" in failed.detail
    assert "docker group" in failed.advice


async def test_a_job_crash_inside_the_container_is_failed_app(lab, engine, engine_cfg, engines):
    cfg = engine_cfg(job={"command": job(lab, "--steps", 0, "--interval", 0.05, "--threads", 3, "--crash", "fx", "--crash-at", 1)})
    res = await engines(cfg).attempt("serialise first compile")
    assert (res.outcome, res.verdict.layer) == (Outcome.FAILED, Layer.APP), stages(res.verdict)
    assert "FX to symbolically trace" in str(res.first_error)


async def test_restart_is_the_engines_restart_and_waits_until_it_runs(lab, engine, engine_cfg, engines):
    kind, name, ctid = engine
    before = lab.container_init_pid(ctid)
    eng = engines(engine_cfg())
    v = await eng.run_action("reboot")
    assert v.ok, stages(v)
    first = next(s for s in v.stages if s.name == "reboot")
    assert f"/{kind} restart {name}` returned" in first.detail, first.detail
    assert [s.name for s in v.stages][-1] == "clean process table"
    after = lab.container_init_pid(ctid)
    assert after is not None and after != before  # a new PID 1: the container really restarted
    res = await eng.attempt("after the restart")
    assert res.outcome is Outcome.PASSED, stages(res.verdict)
