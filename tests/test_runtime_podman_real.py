"""``runtime = "podman"`` against a real Podman (Debian's 4.3, runc, vfs storage; see
``tests/lab/podman.py``) through the lab's real sshd: the pct scenarios, with nothing emulated
between cockpit and the container: running, stopped, missing, a job crash, a restart.

Skipped where Podman or runc is not installed; under CI=true that is a failure, since
./scripts/test installs both.  The same line as everywhere: a container Podman cannot give is the
host's failure and the fix never ran (``untested``); only the job's own crash is ``app``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from cockpit.core.layers import Layer, Outcome, Status
from tests.lab.podman import RealPodman, real_podman_unavailable_reason

pytestmark = pytest.mark.lab

_names = itertools.count(1)


@pytest.fixture(scope="module")
def podman(lab) -> Iterator[RealPodman]:
    reason = real_podman_unavailable_reason()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"real Podman unavailable under CI ({reason}); ./scripts/test installs it")
        pytest.skip(reason)
    pm = RealPodman(lab)
    yield pm
    pm.close()


@pytest.fixture
def box(podman) -> Iterator[str]:
    """A running Podman container of its own for each test (a fresh name: no state carries over)."""
    name = f"real-trainer-{next(_names)}"
    podman.create(name)
    yield name
    podman.run("rm", "-f", "-t", "0", name, check=False)


@pytest.fixture
def cfg(lab_config, podman, box):
    def make(**overrides):
        ws = str(podman.workspace(box))
        target = {"runtime": "podman", "container": box, "podman": str(podman.podman), **overrides.pop("target", {})}
        job = {"workdir": ws, "log": f"{ws}/train-{{attempt}}.log", **overrides.pop("job", {})}
        return lab_config(target=target, job=job, deploy={"dest": f"{ws}/src"}, **overrides)

    return make


def stages(v):
    return [(s.name, s.status.value, s.detail) for s in v.stages]


async def test_a_real_podman_container_passes_and_the_job_runs_in_its_namespace(lab, podman, box, cfg, engines):
    eng = engines(cfg())
    res = await eng.attempt("baseline")
    assert res.outcome is Outcome.PASSED, stages(res.verdict)
    host = next(s for s in res.verdict.stages if s.name == "connect: host answers")
    assert f"container {box} is running" in host.detail
    shell = next(s for s in res.verdict.stages if s.name == "connect: target shell answers")
    assert box in shell.detail  # the hostname Podman gave the container, not the host's
    # the job's pid is the one Podman's pid namespace sees: asked through Podman itself
    assert eng.job is not None
    r = podman.run("exec", "-i", box, "/bin/sh", "-c", f"cat /proc/{eng.job.pid}/cmdline")
    assert "jobsim" in r.stdout
    # in the pid namespace of the container's PID 1 ({{.State.Pid}}), not the host's
    init = podman.init_pid(box)
    assert init is not None
    ns = podman.run("exec", "-i", box, "/bin/sh", "-c", f"readlink /proc/{eng.job.pid}/ns/pid").stdout.strip()
    assert ns == os.readlink(f"/proc/{init}/ns/pid") != os.readlink("/proc/self/ns/pid")


async def test_a_stopped_real_container_is_untested_host_with_podman_start(podman, box, cfg, engines):
    podman.run("stop", "-t", "0", box)
    res = await engines(cfg()).attempt("never runs")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.HOST), stages(res.verdict)
    failed = res.verdict.failed_stage
    assert "stopped" in failed.detail and f"podman start {box}" in failed.advice
    assert all(s.status is Status.NOT_REACHED for s in res.verdict.stages if s.name.startswith(("deploy", "launch", "verify")))


async def test_a_missing_real_container_is_untested_host_with_podmans_own_text(cfg, engines):
    res = await engines(cfg(target={"container": "no-such-box"})).attempt("never runs")
    assert (res.outcome, res.verdict.layer) == (Outcome.UNTESTED, Layer.HOST), stages(res.verdict)
    failed = res.verdict.failed_stage
    assert "container missing" in failed.detail and 'no such object: "no-such-box"' in failed.detail
    assert "podman ps -a" in failed.advice


async def test_exec_into_a_stopped_real_container_exits_255_and_is_still_the_hosts(podman, box):
    """Podman 4.3 exits 255 (not 125) here; the emulator copies it and cockpit maps the text."""
    from cockpit.core.remote.session import classify_start_failure

    podman.run("stop", "-t", "0", box)
    r = podman.run("exec", "-i", box, "/bin/sh", "-c", "true", check=False)
    assert r.returncode == 255 and "container state improper" in r.stderr
    layer, msg, hint = classify_start_failure(r.returncode, r.stderr, runtime="podman")
    assert layer is Layer.HOST and "not running" in msg and "podman start" in hint


async def test_a_job_crash_in_a_real_container_is_failed_app(lab, cfg, engines):
    command = lab.jobsim_command("--steps", 0, "--interval", 0.05, "--threads", 3, "--crash", "fx", "--crash-at", 1)
    res = await engines(cfg(job={"command": command})).attempt("serialise first compile")
    assert (res.outcome, res.verdict.layer) == (Outcome.FAILED, Layer.APP), stages(res.verdict)
    assert "FX to symbolically trace" in str(res.first_error)


async def test_restart_is_podman_restart_and_waits_until_it_runs(podman, box, cfg, engines):
    before = podman.init_pid(box)
    eng = engines(cfg())
    v = await eng.run_action("reboot")
    assert v.ok, stages(v)
    first = next(s for s in v.stages if s.name == "reboot")
    assert f"podman restart {box}` returned" in first.detail, first.detail
    assert [s.name for s in v.stages][-1] == "clean process table"
    after = podman.init_pid(box)
    assert after is not None and after != before  # Podman started a new PID 1: it really restarted
    res = await eng.attempt("after the restart")
    assert res.outcome is Outcome.PASSED, stages(res.verdict)
