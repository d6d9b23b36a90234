"""Infrastructure faults that read as the code's, and the code's own faults that read as infrastructure.

* The filesystem of the job's log read-only, or full, at the launch: the spawn's redirect failed at
  ``process`` (read-only), or the supervisor, unable to write its pid file, ran the job anyway and
  the launch said "it never spawned" while the job ran unfollowed (full).  Prepare now writes beside
  the log first: ``untested (container)`` naming the filesystem, and the job is never started.
* A trainer that logged steps and then exited 127 itself read ``failed (container)``: "the command or
  its interpreter was not found inside the target".  127 means "not found" only when the code never
  ran or a shell said so; a missing interpreter stays ``untested (container)``.
* A job hung while nvidia-smi says the GPU fell off the bus: no utilisation could be read, so the
  stall was ``app`` with no evidence.  nvidia-smi's own words now place it at ``gpu``.
* The container stopped (``pct stop``) after the verdict: the fate follower took it for a dropped
  link and retried for ever, the journal reading ``running``; ``cockpit status`` raised.  The job
  went with its container: ``vanished (host)``.
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.job import SUPERVISOR
from cockpit.core.layers import Layer, Outcome
from tests.lab import await_for
from tests.lab.runs import fate_of, fresh_fate, script_command

pytestmark = pytest.mark.lab


def _marked(lab: Any, mark: Path) -> str:
    """A job that leaves ``mark`` in the workspace the moment its command runs, then trains."""
    mark.unlink(missing_ok=True)
    return f"touch {mark}; exec {lab.jobsim_command('--steps', 0, '--interval', 0.1)}"


@pytest.mark.parametrize("fault", ["read-only", "full"])
async def test_a_log_filesystem_that_takes_no_write_is_untested_container_and_nothing_runs(fault: str, lab: Any, lab_config: Any,
                                                                                        engines: Any) -> None:
    ws = lab.workspace()
    d, mark = ws / f"logs-{fault}", ws / "ran-mark"
    d.mkdir(exist_ok=True)
    make = (f"mount --bind {d} {d} && mount -o remount,bind,ro {d}" if fault == "read-only"
            else f"mount -t tmpfs -o size=256k tmpfs {d} && {{ dd if=/dev/zero of={d}/fill bs=4k count=100 2>/dev/null; true; }}")
    assert lab.exec_in(200, make).returncode == 0  # in the container's own mount namespace only
    try:
        cfg = lab_config(job={"command": _marked(lab, mark), "log": f"{d}/train-{{attempt}}.log"})
        res = await engines(cfg).attempt(f"log on a {fault} filesystem")
    finally:
        assert lab.exec_in(200, f"umount {d}").returncode == 0
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.UNTESTED and fs is not None and fs.layer is Layer.CONTAINER, res.verdict.summary()
    assert fs.name == "launch: prepare" and "the job was not started" in fs.detail, fs.detail
    assert ("Read-only file system" if fault == "read-only" else f"{d} is full (100% used") in fs.detail, fs.detail
    assert res.job is None and not mark.exists()  # the job's command never ran


def test_the_supervisor_starts_nothing_when_it_cannot_write_its_pid_file(tmp_path: Path) -> None:
    """The race prepare cannot close (the filesystem fills between prepare and spawn): no job runs unfollowed."""
    full, mark = tmp_path / "full", tmp_path / "ran-mark"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], check=True)
    try:
        subprocess.run(f"dd if=/dev/zero of={full}/fill bs=4k count=40 2>/dev/null; true", shell=True, check=True)
        r = subprocess.run(["/bin/sh", "-c", SUPERVISOR, "cockpit-job", f"{full}/j.pid", f"{full}/j.exit", f"touch {shlex.quote(str(mark))}"],
                           capture_output=True, text=True, timeout=10)
    finally:
        subprocess.run(["umount", str(full)], check=True)
    assert r.returncode == 97 and not mark.exists(), (r.returncode, r.stderr)


async def test_a_trainers_own_exit_127_is_its_exit_not_a_missing_interpreter(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job={"command": script_command(lab, "infra_exit127.py")})
    res = await engines(cfg).attempt("the trainer exits 127 itself")
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and fs is not None and fs.layer is Layer.PROCESS, res.verdict.summary()
    assert "exited with code 127" in fs.detail and "not found inside the target" not in fs.detail, fs.detail
    assert "shardctl" in fs.detail, fs.detail  # its own last words
    cfg = lab_config(job={"command": "/opt/missing/bin/python3 train.py"})
    res = await engines(cfg).attempt("the interpreter is missing")
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.UNTESTED and fs is not None and fs.layer is Layer.CONTAINER, res.verdict.summary()
    assert "the command or its interpreter was not found inside the target" in fs.detail, fs.detail


async def test_a_hang_while_nvidia_smi_says_the_gpu_fell_off_the_bus_is_gpu_not_app(lab: Any, lab_config: Any, engines: Any) -> None:
    lab.set_gpu_state("fallen-off-bus")
    cfg = lab_config(job={"command": script_command(lab, "steps_then_hang.py")},
                     verify={"settle": 5.0, "stall_after": 1.5, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("hang, GPU off the bus")
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and fs is not None and fs.name.endswith("settled"), res.verdict.summary()
    assert fs.layer is Layer.GPU and "nvidia-smi fails: GPU 0000:01:00.0 is lost (fallen off the bus?)" in fs.detail, fs.detail
    await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state == "stalled", 20, "the stalled fate")
    fate = fate_of(cfg, res.attempt)
    assert fate.layer == "gpu" and "nvidia-smi fails" in fate.cause, fate


async def test_a_container_stopped_after_the_verdict_is_vanished_host_not_running_for_ever(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(verify={"settle": 1.0, "fate_interval": 0.3})
    eng = engines(cfg)
    res = await eng.attempt("the container will be stopped")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert lab.pct("stop", 200).returncode == 0  # not by cockpit
    try:
        await await_for(lambda: (f := fate_of(cfg, res.attempt)) is not None and f.state != "running", 20, "a fate after the stop")
        fate = fate_of(cfg, res.attempt)
        assert (fate.state, fate.layer) == ("vanished", "host") and "container stopped under the job" in fate.cause, fate
        status = await asyncio.wait_for(fresh_fate(cfg), 30)  # as `cockpit status` reads it
        assert status is not None and (status.state, status.layer) == ("vanished", "host"), status
    finally:
        lab.pct("start", 200)


async def test_a_file_deleted_from_the_source_leaves_the_target_unless_changed_there(lab: Any, lab_config: Any, engines: Any) -> None:
    # a fix that deletes a module never landed: deploy unpacked over the dest and checked only what it
    # sent, so the old patch (imported by a plugin glob) stayed and the verdict judged the old code
    src = lab.dir / "src"
    shadow, notes = src / "shadow_patch.py", src / "notes.py"
    cfg = lab_config()
    shadow.write_text("raise SystemExit('the old patch, imported by a plugin glob')\n")
    notes.write_text("NOTES = 1\n")
    try:
        first = await engines(cfg).attempt("with the patch")
        assert first.outcome is Outcome.PASSED, first.verdict.summary()
        dest = Path(cfg.deploy.dest or cfg.job.workdir)
        assert (dest / "shadow_patch.py").exists() and (dest / "notes.py").exists()
        (dest / "notes.py").write_text("NOTES = 2  # edited in the target since\n")  # not cockpit's content any more
        (dest / "run.ckpt").write_bytes(b"the job's own output")  # never deployed
    finally:
        shadow.unlink()
        notes.unlink()
    second = await engines(cfg).attempt("the fix: the patch deleted")
    assert second.outcome is Outcome.PASSED, second.verdict.summary()
    checks = next(s for s in second.verdict.stages if s.name.endswith("checksums"))
    assert not (dest / "shadow_patch.py").exists(), checks.detail
    assert checks.data.get("removed") == ["shadow_patch.py"] and "removed 1 file an earlier deploy sent" in checks.detail, checks
    assert (dest / "notes.py").read_text().startswith("NOTES = 2") and (dest / "run.ckpt").exists()
