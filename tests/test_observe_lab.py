"""Observation against the lab: `cockpit status --json` shows zombies, GPU failures, classified crashes."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from cockpit.core.config import load_config
from cockpit.core.engine import Engine
from tests.lab import wait_for

pytestmark = pytest.mark.lab


@pytest.fixture
def conf(lab_config):
    """``make(**overrides) -> str``: the path of a lab config."""
    return lambda **overrides: str(lab_config(**overrides).path)


def status(conf_path: str) -> tuple[int, dict]:
    r = subprocess.run([sys.executable, "-m", "cockpit", "status", "--json", "-c", conf_path], capture_output=True, text=True, timeout=60)
    return r.returncode, json.loads(r.stdout)


def test_status_shows_a_zombie_and_its_unreaping_parent(lab, conf):
    lab.add_container(203, reaping_init=False)
    try:
        lab.exec_in(203, "setsid sleep 0.1 </dev/null >/dev/null 2>&1 &")
        wait_for(lambda: ") Z " in lab.exec_in(203, "cat /proc/[0-9]*/stat").stdout, timeout=10)
        rc, d = status(conf(target={"container": 203}))
        assert rc == 0
        zombies = [f for f in d["findings"] if f["kind"].startswith("zombie")]
        assert zombies, d["findings"]
        z = zombies[0]
        assert z["layer"] == "container"
        assert "sleepy-init" in z["summary"] + z["advice"] + json.dumps(z["subject"])
        assert "reboot" in z["advice"]
        assert d["processes"]["collected_at"] and d["processes"]["count"] >= 2
    finally:
        lab.remove_container(203)


@pytest.mark.parametrize("mode, text", [
    ("driver-failure", "couldn't communicate with the NVIDIA driver"),
    ("version-mismatch", "Driver/library version mismatch"),
    ("fallen-off-bus", "Unable to determine the device handle"),
])
def test_status_reports_gpu_failures_in_the_gpu_layer(lab, conf, mode, text):
    lab.set_gpu_state(mode)
    rc, d = status(conf())
    gpu_findings = [f for f in d["gpu"]["findings"] if f["severity"] == "error"]
    assert gpu_findings and gpu_findings[0]["layer"] == "gpu"
    assert text in json.dumps(gpu_findings)


def test_hung_nvidia_smi_is_killed_and_reported(lab, conf):
    lab.set_gpu_state("hang")
    t0 = time.monotonic()
    rc, d = status(conf(gpu={"timeout": 1}))
    assert time.monotonic() - t0 < 15
    f = [f for f in d["gpu"]["findings"] if f["severity"] == "error"][0]
    assert f["layer"] == "gpu" and ("hung" in f["summary"].lower() or "did not answer" in f["summary"].lower() or "timed out" in f["summary"].lower())
    # nothing of the hung query is left running in the container
    left = lab.exec_in(200, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '").stdout
    assert "nvidia-smi --query" not in left


def test_status_normal_gpu_values_and_na(lab, conf):
    lab.set_gpu_state("normal", gpus=[lab.gpu(0, **{"utilization.gpu": 97, "power.draw": "[N/A]"})])
    rc, d = status(conf())
    g = d["gpu"]["gpus"][0]
    assert 97 in g.values(), g
    assert "N/A" in json.dumps(g)


async def test_status_classifies_the_fx_crash_of_the_current_attempt(lab, conf):
    path = conf(job={"command": lab.jobsim_command("--steps", "0", "--interval", "0.05", "--threads", "3", "--crash", "fx", "--crash-at", "1")})
    (lab.dir / "src").mkdir(exist_ok=True)
    (lab.dir / "src" / "train.py").write_text("x = 1\n")
    eng = Engine(load_config(path))
    try:
        res = await eng.attempt("fx")
        assert res.outcome.value == "failed"
    finally:
        await eng.close()
    rc, d = status(path)
    log = d["log"]
    assert log["path"].endswith("train-1.log") and log["size"] > 0
    assert "FX to symbolically trace" in json.dumps(log["first_error"])
    assert log["first_error"]["layer"] == "app"
    assert any("Traceback" in ln for ln in log["first_error"]["subject"]["traceback"])


def test_status_reads_host_kernel_messages_for_this_container(lab, conf):
    lab.add_kernel_message("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=ns,mems_allowed=0,oom_memcg=/lxc/200,"
                           "task_memcg=/lxc/200/ns,task=python3,pid=4242,uid=0")
    lab.add_kernel_message("Memory cgroup out of memory: Killed process 4242 (python3) total-vm:1000kB, anon-rss:900kB, "
                           "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:10kB oom_score_adj:0")
    lab.add_kernel_message("Memory cgroup out of memory: Killed process 777 (java) total-vm:1000kB, anon-rss:900kB, "
                           "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:10kB oom_score_adj:0")  # no container: kept
    lab.add_kernel_message("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=ns,mems_allowed=0,oom_memcg=/lxc/999,"
                           "task_memcg=/lxc/999/ns,task=node,pid=5151,uid=0")
    lab.add_kernel_message("Memory cgroup out of memory: Killed process 5151 (node) total-vm:1000kB, anon-rss:900kB, "
                           "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:10kB oom_score_adj:0")
    lab.add_kernel_message("NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python3, GPU has fallen off the bus.")
    rc, d = status(conf())
    kinds = {(f["kind"], f["layer"]) for f in d["kernel"]["findings"]}
    assert ("oom-kill", "container") in kinds and ("xid", "gpu") in kinds
    text = json.dumps(d["kernel"]["findings"])
    assert "4242" in text and "5151" not in text  # another container's OOM kill is not ours
