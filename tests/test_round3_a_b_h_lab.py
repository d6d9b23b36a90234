"""Verdicts that stay true, against the lab: real Python jobs (tests/lab/jobs/) under pct and docker.

* the code ran, so the attempt **failed** whatever the layer: a job that trains 60 steps and then
  exits 1 from its own guard (no traceback), and one that dies of SIGSEGV in "native code" after
  70 steps, whose only word is the shell's own ``Segmentation fault`` line (named as SIGSEGV);
* a handled error is a **finding**: a traceback a WARNING record carries (``logging``'s default
  format), and torch._dynamo's ``WON'T CONVERT`` eager fallback (PyTorch's glog-style record, its
  exact text): the attempt passes and the fate is ``finished``, the finding in the cause; a job that
  exits 0 after its last step is never ``died … exited with code 0``, even with an ERROR record;
* the **disk**, not the code: a checkpoint directory on a real, full 1 MiB tmpfs (mounted in the
  container's own mount namespace) makes the job raise PyTorch's ``enforce fail …
  unexpected pos``; the cause is ``container`` and names the mount and its figures.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cockpit.core.layers import Layer, Outcome, Status
from tests.lab import await_for
from tests.lab.runs import JOBS, fate_of, pct_or_docker, script_command

pytestmark = pytest.mark.lab

DOCKER_CT = 238


async def final_fate(cfg, attempt):
    def final():
        f = fate_of(cfg, attempt)
        return f if f is not None and f.final else None

    return await await_for(final, timeout=20, interval=0.1)


@pytest.fixture(params=["pct", "docker"])
def runtime(request, lab, lab_config):
    """``(make_cfg, ctid)`` for the pct container 200, or a docker container the engine emulator answers for."""
    yield from pct_or_docker(request.param, lab, lab_config, "docker-round3", DOCKER_CT)


async def test_a_job_stopped_by_its_own_guard_after_training_failed_not_untested(lab, runtime, engines):
    make, ctid = runtime
    cfg = make(job={"command": script_command(lab, "guard_exit.py", ctid=ctid)}, verify={"settle": 5.0})
    res = await engines(cfg).attempt("guard stops the run")
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.PROCESS, (res.outcome, res.verdict.summary())
    fs = res.verdict.failed_stage
    assert fs.name == "verify: alive" and "exited with code 1" in fs.detail, fs.detail
    assert "last progress: step 60" in fs.detail, fs.detail
    assert "its last line: non-finite loss (inf) at iteration 65, aborting the run" in fs.detail, fs.detail
    f = await final_fate(cfg, res.attempt)
    assert f.state == "died" and f.layer == "process" and "exited with code 1" in f.cause, f
    assert f.cause.endswith("its last line: non-finite loss (inf) at iteration 65, aborting the run"), f.cause


async def test_a_native_crash_after_progress_is_failed_and_names_the_signal_from_the_shells_line(lab, runtime, engines):
    make, ctid = runtime
    cfg = make(job={"command": script_command(lab, "native_crash.py", ctid=ctid)}, verify={"settle": 5.0})
    res = await engines(cfg).attempt("segfaults after 70 steps")
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.PROCESS, (res.outcome, res.verdict.summary())
    fs = res.verdict.failed_stage
    assert "killed by signal 11 (SIGSEGV): the shell says Segmentation fault (SIGSEGV)" in fs.detail, fs.detail
    assert res.first_error is not None and res.first_error["kind"] == "shell-sigsegv", res.first_error
    assert res.first_error["line"].strip() in ("Segmentation fault", "Segmentation fault (core dumped)"), res.first_error
    f = await final_fate(cfg, res.attempt)
    assert f.state == "died" and f.layer == "process" and "SIGSEGV" in f.cause, f


async def test_bashs_crash_line_names_the_signal_too(lab, lab_config, engines):
    """A bash wrapper prints ``/bin/bash: line 1: PID Segmentation fault      CMD`` and exits 139."""
    inner = script_command(lab, "native_crash.py", ctid=200)
    cfg = lab_config(job={"command": shlex.join(["/bin/bash", "-c", f"{inner}; exit $?"])}, verify={"settle": 5.0})
    res = await engines(cfg).attempt("segfaults under bash")
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.PROCESS, (res.outcome, res.verdict.summary())
    assert res.first_error is not None and res.first_error["kind"] == "shell-sigsegv", res.first_error
    assert re.match(r"^/bin/bash: line 1: +\d+ Segmentation fault +/", res.first_error["line"]), res.first_error
    assert "the shell says Segmentation fault (SIGSEGV)" in res.verdict.failed_stage.detail


async def test_a_traceback_logged_at_warning_is_a_finding_and_the_job_finishes(lab, runtime, engines):
    make, ctid = runtime
    cfg = make(job={"command": script_command(lab, "handled_warning.py", 40, 0.05, ctid=ctid)}, verify={"settle": 1.0})
    res = await engines(cfg).attempt("a handled push failure")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert [(f.kind, f.severity.value) for f in res.findings] == [("python-traceback", "warning")], res.findings
    assert "ConnectionError: dashboard at 10.0.0.7:8080 refused the connection" in res.findings[0].summary
    st = res.verdict.stages[-1]  # said in the verdict, as a finding
    assert (st.name, st.status, st.detail[:44]) == ("verify: findings", Status.OK, "1 warning in the log: ConnectionError: dashb"), st
    f = await final_fate(cfg, res.attempt)
    assert f.state == "finished" and f.layer is None, f
    assert f.cause.startswith("exited with code 0; 1 warning in the log: ConnectionError: dashboard"), f.cause


async def test_dynamo_eager_fallback_is_a_compile_finding_not_a_failure(lab, lab_config, engines):
    cfg = lab_config(job={"command": script_command(lab, "eager_fallback.py", 40, 0.05, ctid=200)})
    res = await engines(cfg).attempt("suppress_errors = True")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    script = Path(lab.workspace(200)) / "eager_fallback.py"
    assert [f.summary for f in res.findings] == [f"running eagerly: compile failed for `forward` ({script}:41)"], res.findings
    assert res.findings[0].kind == "dynamo-eager-fallback" and res.findings[0].layer is Layer.APP
    assert res.verdict.stages[-1].detail == f"1 warning in the log: {res.findings[0].summary}"
    f = await final_fate(cfg, res.attempt)
    assert f.state == "finished", f
    assert "running eagerly: compile failed for `forward`" in f.cause, f.cause


async def test_exit_0_after_the_last_step_is_finished_with_an_error_record_as_a_finding(lab, lab_config, engines):
    """An ERROR record's traceback stays a failure for the verdict; the job's exit 0 is still its end, not a death."""
    script = script_command(lab, "handled_warning.py", 60, 0.05, ctid=200)
    cfg = lab_config(job={"command": script.replace("handled_warning.py", "handled_error.py")})
    src = (JOBS / "handled_warning.py").read_text().replace("log.warning(", "log.error(")
    (Path(lab.workspace(200)) / "handled_error.py").write_text(src)
    res = await engines(cfg).attempt("an ERROR record, then a clean exit")
    assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.APP, res.verdict.summary()
    f = await final_fate(cfg, res.attempt)
    assert f.state == "finished" and f.layer is None, f
    assert f.cause.startswith("exited with code 0; 1 error in the log: ConnectionError"), f.cause


async def test_a_full_checkpoint_filesystem_is_the_containers_fault_named_with_its_mount(lab, runtime, engines):
    make, ctid = runtime
    ckpt = Path(lab.workspace(ctid)) / "ckpt-full"
    ckpt.mkdir(exist_ok=True)
    r = lab.exec_in(ctid, f"mount -t tmpfs -o size=1m tmpfs {shlex.quote(str(ckpt))}")
    if r.returncode != 0:
        pytest.skip(f"no tmpfs mount inside the lab container: {r.stderr.strip()}")
    try:
        cfg = make(job={"command": script_command(lab, "ckpt_full.py", ckpt, ctid=ctid), "workdir": str(ckpt)},
                   verify={"settle": 5.0})
        res = await engines(cfg).attempt("checkpoints fill the volume")
        assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.CONTAINER, (res.outcome, res.verdict.summary())
        fs = res.verdict.failed_stage
        assert f"disk full: {ckpt} (the workdir's filesystem, tmpfs) is full: " in fs.detail, fs.detail
        assert "free of 1.0 MiB" in fs.detail and "% used)" in fs.detail, fs.detail
        assert "the job's error: writing a checkpoint failed (disk full?)" in fs.detail, fs.detail
        assert fs.data["disk_full"][0]["mount"] == str(ckpt) and fs.data["disk_full"][0]["pct"] >= 98
        f = await final_fate(cfg, res.attempt)
        assert f.state == "died" and f.layer == "container" and str(ckpt) in f.cause, f
    finally:
        lab.exec_in(ctid, f"umount {shlex.quote(str(ckpt))}")


async def test_a_filesystem_out_of_inodes_is_full_too(lab, lab_config, engines):
    ckpt = Path(lab.workspace(200)) / "ckpt-inodes"
    ckpt.mkdir(exist_ok=True)
    r = lab.exec_in(200, f"mount -t tmpfs -o size=64m,nr_inodes=40 tmpfs {shlex.quote(str(ckpt))}")
    if r.returncode != 0:
        pytest.skip(f"no tmpfs mount inside the lab container: {r.stderr.strip()}")
    try:
        cfg = lab_config(job={"command": script_command(lab, "ckpt_full.py", ckpt, 1024, 1, ctid=200), "workdir": str(ckpt)},
                         verify={"settle": 5.0})
        res = await engines(cfg).attempt("one small file per step")
        assert res.outcome is Outcome.FAILED and res.verdict.layer is Layer.CONTAINER, (res.outcome, res.verdict.summary())
        detail = res.verdict.failed_stage.detail
        assert f"disk full: {ckpt} (the workdir's filesystem, tmpfs) is full: 0 inodes free of 40 (100% used)" in detail, detail
        assert "MiB free" not in detail, detail  # the space is there: the inodes are not
    finally:
        lab.exec_in(200, f"umount {shlex.quote(str(ckpt))}")
