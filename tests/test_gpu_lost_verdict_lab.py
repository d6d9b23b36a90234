"""A GPU lost (or an Xid) while a job passes on: said in the verdict as a gpu finding, never as a failure."""

from __future__ import annotations

import shlex
import time

import pytest

import cockpit.core.actions.gpufault as gpufault
import cockpit.core.fate as fate_mod
from cockpit.core.fate_record import fate_text
from cockpit.core.layers import Layer, Outcome, Status
from tests.lab.runs import fate_of, final_fate
from tests.lab.util import await_for

pytestmark = pytest.mark.lab

LOST = "Unable to determine the device handle for GPU 0000:01:00.0: GPU is lost.  Reboot the system to recover this GPU"
XID = "NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python3, GPU has fallen off the bus."


def _steps(lab: object) -> str:
    return lab.jobsim_command("--steps", 0, "--interval", 0.05)  # type: ignore[attr-defined,no-any-return]


def _gpu_stage(res: object) -> object:
    stages = [s for s in res.verdict.stages if s.name == "verify: gpu"]  # type: ignore[attr-defined]
    assert len(stages) == 1, [(s.name, s.detail) for s in res.verdict.stages]  # type: ignore[attr-defined]
    return stages[0]


async def test_a_lost_gpu_is_said_in_a_passed_verdict_with_its_bus_id_and_what_nvidia_smi_said(lab, lab_config, engines):
    lab.set_gpu_state("gpu-lost")
    cfg = lab_config(job={"command": _steps(lab)}, verify={"settle": 0.5})
    res = await engines(cfg).attempt("trains on while a GPU is lost")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()  # it may train on other GPUs: not failed for it
    st = _gpu_stage(res)
    assert (st.status, st.layer) == (Status.OK, Layer.GPU), st
    assert st.detail.startswith("a GPU fault while the job runs: GPU 0000:01:00.0 is lost now: nvidia-smi says "
                                f"\"{LOST}\" (exit 15)"), st.detail
    assert "its next steps may fail or hang if it uses this GPU" in st.detail, st.detail
    assert [f["layer"] for f in st.data["findings"]] == ["gpu"], st.data
    # the one line a notification, `cockpit status` and a script read says it too
    assert res.verdict.summary() == f"attempt: ok, but {st.detail}", res.verdict.summary()


async def test_an_xid_since_the_launch_is_said_and_one_before_it_is_not(lab, lab_config, engines):
    lab.add_kernel_message("NVRM: Xid (PCI:0000:3b:00): 79, pid=1111, name=python3, GPU has fallen off the bus.", when=time.time() - 60)
    # the GPU faults as the job starts: the job writes the kernel's line itself, timestamped now
    stamp = "$(date -u +%Y-%m-%dT%H:%M:%S,%6N+00:00)"
    cmd = f"echo \"{stamp} {XID}\" >> {shlex.quote(str(lab.kmsg_file))}; exec {_steps(lab)}"
    cfg = lab_config(job={"command": f"sh -c {shlex.quote(cmd)}"}, verify={"settle": 0.5})
    res = await engines(cfg).attempt("an Xid 79 while it trains")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    st = _gpu_stage(res)
    assert (st.status, st.layer) == (Status.OK, Layer.GPU), st
    assert "Xid 79 on GPU" in st.detail and "0000:18:00" in st.detail and "since the launch" in st.detail, st.detail
    assert XID in st.detail, st.detail  # what the kernel said, whole
    assert "0000:3b:00" not in st.detail, st.detail  # before the launch: not this job's window
    assert "its next steps may fail or hang" in st.detail, st.detail


async def test_healthy_gpus_add_nothing_to_the_verdict(lab, lab_config, engines):
    cfg = lab_config(job={"command": _steps(lab)}, verify={"settle": 0.5})
    res = await engines(cfg).attempt("healthy GPUs")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert not [s for s in res.verdict.stages if s.name == "verify: gpu"], [(s.name, s.detail) for s in res.verdict.stages]


async def test_the_fate_of_a_job_running_on_past_a_lost_gpu_says_so(lab, lab_config, engines):
    lab.set_gpu_state("gpu-lost")
    cfg = lab_config(job={"command": _steps(lab)}, verify={"settle": 0.5})
    res = await engines(cfg).attempt("runs on")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.layer == "gpu", 5, "a running fate naming the GPU")
    f = fate_of(cfg, res.attempt)
    assert f.state == "running" and "GPU 0000:01:00.0 is lost now" in f.cause, f
    assert fate_text(f).startswith("running, but a gpu fault: "), fate_text(f)
    assert "its next steps may fail or hang" in f.cause, f.cause


async def test_the_verdicts_gpu_reading_serves_the_first_fate_and_the_follower(lab, lab_config, engines, monkeypatch):
    # one nvidia-smi and one kernel-log read for the verdict, its first fate and the follower's first
    # reading, all a moment apart (each read the GPUs on its own: three times per passing attempt)
    calls: list[float] = []
    real = gpufault.gpu_faults

    async def counted(ctx, launched_at):
        calls.append(time.monotonic())
        return await real(ctx, launched_at)

    monkeypatch.setattr(gpufault, "gpu_faults", counted)
    monkeypatch.setattr(fate_mod, "gpu_faults", counted)
    lab.set_gpu_state("gpu-lost")
    cfg = lab_config(job={"command": _steps(lab)}, verify={"settle": 0.5})
    eng = engines(cfg)
    res = await eng.attempt("one reading")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert eng.follower is not None
    await await_for(lambda: eng.follower.checked is not None, 10, "the follower's first reading")
    assert len(calls) == 1, calls
    first = fate_of(cfg, res.attempt)
    assert first.state == "running" and first.layer == "gpu" and "is lost now" in first.cause, first  # what the verdict read
    assert eng.follower.checked.layer == "gpu", eng.follower.checked


async def test_a_gpu_lost_after_the_verdict_reaches_the_running_fate(lab, lab_config, engines, monkeypatch):
    monkeypatch.setattr(fate_mod, "GPU_CHECK_S", 0.2)
    cfg = lab_config(job={"command": _steps(lab)}, verify={"settle": 0.5, "fate_interval": 0.2})
    res = await engines(cfg).attempt("healthy, then a GPU falls off the bus")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "running", 5, "the first fate")
    assert fate_of(cfg, res.attempt).layer is None
    lab.set_gpu_state("gpu-lost")
    await await_for(lambda: fate_of(cfg, res.attempt).layer == "gpu", 5, "the fate's news of the lost GPU")
    assert "GPU 0000:01:00.0 is lost now" in fate_of(cfg, res.attempt).cause


async def test_a_job_that_dies_after_its_gpu_was_lost_dies_of_the_gpu(lab, lab_config, engines):
    lab.set_gpu_state("gpu-lost")
    cmd = lab.jobsim_command("--steps", 0, "--interval", 0.05, "--crash", "sigkill", "--crash-at", 40)
    cfg = lab_config(job={"command": cmd}, verify={"settle": 0.5})
    res = await engines(cfg).attempt("dies a moment after its verdict")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    f = await final_fate(cfg, res.attempt)
    assert f.state == "died" and f.layer == "gpu", f  # it said process (killed by SIGKILL) with the GPU lost in its window
    assert "SIGKILL" in f.cause and "a GPU fault in the job's window: GPU 0000:01:00.0 is lost now" in f.cause, f.cause
