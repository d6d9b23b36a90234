"""``runtime = "docker"`` against a real Docker (Debian's docker.io: a dockerd of the lab's own, see
``tests/lab/docker_real.py``) through the lab's real sshd: running, stopped, missing, a job crash, a
restart, with nothing emulated between cockpit and the container.  And the lab's Docker emulator
(``tests/lab/bin/docker``) checked against the real one: the commands cockpit runs give the same
output, exit codes and error texts.

Skipped where docker.io is not installed; under CI=true that is a failure, since ./scripts/test
installs it.  The same line as everywhere: a container Docker cannot give is the host's failure and
the fix never ran (``untested``); only the job's own crash is ``app``.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from cockpit.core.layers import Layer, Outcome, Status
from tests.lab.docker_real import CLI, RealDocker, real_docker_unavailable_reason
from tests.lab.sshd import HOST_PATH

pytestmark = pytest.mark.lab

_names = itertools.count(1)


@pytest.fixture(scope="module")
def docker(lab) -> Iterator[RealDocker]:
    reason = real_docker_unavailable_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"real Docker unavailable under CI ({reason}); ./scripts/test installs it")
        pytest.skip(reason)
    dk = RealDocker(lab)
    try:
        yield dk
    finally:
        dk.close()
        assert dk.leftovers() == [], "dockerd, containerd or a shim outlived the module"


@pytest.fixture
def box(docker) -> Iterator[str]:
    """A running Docker container of its own for each test (a fresh name: no state carries over)."""
    name = f"real-trainer-{next(_names)}"
    docker.create(name)
    yield name
    docker.remove(name)


@pytest.fixture
def cfg(lab_config, docker, box):
    def make(**overrides):
        ws = str(docker.workspace(box))
        target = {"runtime": "docker", "container": box, "docker": str(docker.docker), **overrides.pop("target", {})}
        job = {"workdir": ws, "log": f"{ws}/train-{{attempt}}.log", **overrides.pop("job", {})}
        return lab_config(target=target, job=job, deploy={"dest": f"{ws}/src"}, **overrides)

    return make


def stages(v):
    return [(s.name, s.status.value, s.detail) for s in v.stages]


async def test_a_real_docker_container_passes_and_the_job_runs_in_its_namespace(lab, docker, box, cfg, engines):
    eng = engines(cfg())
    res = await eng.attempt("baseline")
    assert res.outcome is Outcome.PASSED, stages(res.verdict)
    host = next(s for s in res.verdict.stages if s.name == "connect: host answers")
    assert f"container {box} is running" in host.detail
    shell = next(s for s in res.verdict.stages if s.name == "connect: target shell answers")
    assert box in shell.detail  # the hostname Docker gave the container, not the host's
    # the job's pid is the one the container's pid namespace sees: asked through Docker itself
    assert eng.job is not None
    r = docker.run("exec", "-i", box, "/bin/sh", "-c", f"cat /proc/{eng.job.pid}/cmdline")
    assert "jobsim" in r.stdout
    init = docker.init_pid(box)
    assert init is not None
    ns = docker.run("exec", "-i", box, "/bin/sh", "-c", f"readlink /proc/{eng.job.pid}/ns/pid").stdout.strip()
    assert ns == os.readlink(f"/proc/{init}/ns/pid") != os.readlink("/proc/self/ns/pid")


async def test_a_stopped_real_container_is_untested_host_with_docker_start(docker, box, cfg, engines):
    docker.run("stop", "-t", "0", box)
    res = await engines(cfg()).attempt("never runs")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.HOST), stages(res.verdict)
    failed = res.verdict.failed_stage
    assert "stopped (exited)" in failed.detail and f"docker start {box}" in failed.advice
    assert all(s.status is Status.NOT_REACHED for s in res.verdict.stages if s.name.startswith(("deploy", "launch", "verify")))


async def test_a_missing_real_container_is_untested_host_with_dockers_own_text(cfg, engines):
    res = await engines(cfg(target={"container": "no-such-box"})).attempt("never runs")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.HOST), stages(res.verdict)
    failed = res.verdict.failed_stage
    assert "container missing" in failed.detail and "Error: No such object: no-such-box" in failed.detail
    assert "docker ps -a" in failed.advice


async def test_exec_into_a_stopped_real_container_is_the_hosts(docker, box):
    from cockpit.core.remote.session import classify_start_failure

    docker.run("stop", "-t", "0", box)
    r = docker.run("exec", "-i", box, "/bin/sh", "-c", "true", check=False)
    assert r.returncode == 1 and f"Container {docker.container_id(box)} is not running" in r.stderr
    layer, msg, hint = classify_start_failure(r.returncode, r.stderr, runtime="docker")
    assert layer is Layer.HOST and "not running" in msg and "docker start" in hint


async def test_a_job_crash_in_a_real_container_is_failed_app(lab, cfg, engines):
    command = lab.jobsim_command("--steps", 0, "--interval", 0.05, "--threads", 3, "--crash", "fx", "--crash-at", 1)
    res = await engines(cfg(job={"command": command})).attempt("serialise first compile")
    assert (res.outcome, res.verdict.layer) == (Outcome.FAILED, Layer.APP), stages(res.verdict)
    assert "FX to symbolically trace" in str(res.first_error)


async def test_restart_is_docker_restart_and_waits_until_it_runs(docker, box, cfg, engines):
    before = docker.init_pid(box)
    eng = engines(cfg())
    v = await eng.run_action("reboot")
    assert v.ok, stages(v)
    first = next(s for s in v.stages if s.name == "reboot")
    assert f"docker restart {box}` returned" in first.detail, first.detail
    assert [s.name for s in v.stages][-1] == "clean process table"
    after = docker.init_pid(box)
    assert after is not None and after != before  # Docker started a new PID 1: it really restarted
    res = await eng.attempt("after the restart")
    assert res.outcome is Outcome.PASSED, stages(res.verdict)


# ---------------------------------------------------------------- the emulator against the real one
#: what cockpit asks the engine (runtimes/engine.py, remote/startfail.py), on a running container, a
#: stopped one and a missing one
PROBES: list[tuple[str, ...]] = [
    ("inspect", "--format", "{{.State.Status}}", "cmp-up"),
    ("inspect", "--format", "{{.State.Status}}", "cmp-down"),
    ("inspect", "--format", "{{.State.Status}}", "no-such-box"),
    ("inspect", "--format", "{{.State.Status}}", "cmp-up", "no-such-box"),
    ("inspect", "-f", "{{.State.Running}} {{.State.ExitCode}} {{.Name}} {{.Id}}", "cmp-up"),
    # (not {{.State.ExitCode}} here: after `stop -t 0` it is 0 or 137, as the init's exit races the SIGKILL)
    ("inspect", "-f", "{{.State.Running}} {{.State.Pid}} {{.Name}}", "cmp-down"),
    ("exec", "-i", "cmp-up", "/bin/sh", "-c", "echo out; echo err >&2; exit 3"),
    ("exec", "-i", "cmp-up", "/bin/sh", "-c", "true"),
    ("exec", "-i", "cmp-down", "/bin/sh", "-c", "true"),
    ("exec", "-i", "no-such-box", "/bin/sh", "-c", "true"),
    ("exec", "-i", "cmp-up", "no-such-program"),
    ("exec", "-i", "cmp-up", "/no/such/program"),
    ("stop", "-t", "0", "cmp-down"),
    ("start", "no-such-box"),
    ("stop", "no-such-box"),
    ("restart", "no-such-box"),
]

_ID = re.compile(r"\b[0-9a-f]{64}\b")


def _answer(r: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return (r.returncode, _ID.sub("<ID>", r.stdout), _ID.sub("<ID>", r.stderr))


def _real_clis() -> list[str]:
    """Debian's docker CLI, and a different ``docker`` on the host's PATH (a newer one) if any."""
    other = shutil.which("docker", path=HOST_PATH)
    if other and os.path.realpath(other) != os.path.realpath(CLI):
        return [CLI, other]
    return [CLI]


@pytest.fixture
def emulated_pair(lab) -> Iterator[None]:
    lab.add_engine_container("docker", "cmp-up", 281)
    lab.add_engine_container("docker", "cmp-down", 282)
    yield
    lab.remove_container(281)
    lab.remove_container(282)


def test_the_lab_docker_emulator_answers_as_the_real_docker_does(lab, docker, emulated_pair):
    """Each probe's (exit code, stdout, stderr), container ids masked, from the emulator equals a
    real docker CLI's against the real dockerd.  The CLIs differ among themselves in one place
    (``exec`` of a missing container: 20.10 ``Error: No such container``, newer ``Error response
    from daemon: No such container``), so the emulator must equal one of them, not all."""
    for name in ("cmp-up", "cmp-down"):
        docker.create(name)
    docker.run("stop", "-t", "0", "cmp-down")
    env = {"PATH": lab.path_env, "HOME": "/root", "LANG": "C.UTF-8"}
    emulator = str(lab.bin_dir / "docker")
    assert subprocess.run([emulator, "stop", "-t", "0", "cmp-down"], env=env, capture_output=True).returncode == 0
    clis = _real_clis()
    disagreements = []
    try:
        for probe in PROBES:
            real = {cli: _answer(docker.run(*probe, check=False, cli=cli)) for cli in clis}
            r = subprocess.run([emulator, *probe], env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
            emu = _answer(subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(), r.stderr.decode()))
            if emu not in real.values():
                disagreements.append(f"docker {' '.join(probe)}\n  emulator: {emu}\n"
                                     + "".join(f"  {cli}: {a}\n" for cli, a in real.items()))
    finally:
        for name in ("cmp-up", "cmp-down"):
            docker.remove(name)
    assert not disagreements, "the emulator disagrees with the real docker:\n" + "\n".join(disagreements)
