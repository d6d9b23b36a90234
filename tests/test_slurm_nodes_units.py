"""Slurm on nodes, without a cluster: sacct's lines (MaxRSS of the steps, accounting off said once),
the node-local cache script run by a real /bin/sh, the batch script's clearing line, per-node GPU
snapshots merged, a failed node's ``scontrol show node`` read."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cockpit.core.actions.job import JobRecord
from cockpit.core.config import load_config
from cockpit.core.slurm.scontrol import NO_ACCOUNTING, parse_sacct_all, rss_kib
from cockpit.core.slurm.state import SlurmReader

# `sacct -j 4242 -n -P -o JobID,State,ExitCode,Elapsed,NodeList,MaxRSS` on a cluster with slurmdbd:
# the allocation's line (no MaxRSS: it has no process of its own), then the batch, extern and srun steps
SACCT_OOM = ("4242|OUT_OF_MEMORY|0:125|00:03:10|gpu-node-[07-08]|\n"
             "4242.batch|OUT_OF_MEMORY|0:125|00:03:10|gpu-node-07|15728640K\n"
             "4242.extern|COMPLETED|0:0|00:03:10|gpu-node-[07-08]|1028K\n"
             "4242.0|OUT_OF_MEMORY|0:125|00:03:08|gpu-node-[07-08]|62.50G\n")
SACCT_FAILED = "4243|FAILED|1:0|00:00:07|gpu-node-01|\n4243.batch|FAILED|1:0|00:00:07|gpu-node-01|1532K\n4243.extern|COMPLETED|0:0|00:00:07|gpu-node-01|0\n"


@pytest.mark.parametrize(("text", "kib"), [("1532K", 1532), ("62.50G", 65536000), ("3M", 3072), ("0", 0), ("2048", 2), ("", None), ("n/a", None)])
def test_maxrss_in_kib(text: str, kib: int | None) -> None:
    assert rss_kib(text) == kib


def test_sacct_allocation_line_with_the_largest_step_maxrss() -> None:
    f = parse_sacct_all(SACCT_OOM.replace("\n", ";"), "4242")  # as the reader's command joins them
    assert f is not None and (f["JobState"], f["ExitCode"], f["RunTime"], f["NodeList"]) == ("OUT_OF_MEMORY", "0:125", "00:03:10", "gpu-node-[07-08]")
    assert f["MaxRSS"] == "65536000K" and f["max_rss_kib"] == "65536000"
    assert parse_sacct_all(SACCT_FAILED, "4243")["MaxRSS"] == "1532K"  # type: ignore[index]
    assert parse_sacct_all(SACCT_FAILED, "4242") is None  # another job's lines
    assert parse_sacct_all("sacct: error: Slurm accounting storage is disabled;", "4242") is None


def _reader(tmp_path: Path, job_id: str) -> SlurmReader:
    p = tmp_path / "c.toml"
    p.write_text('[target]\nhost = "login"\nruntime = "slurm"\n[job]\ncommand = "python3 train.py"\nworkdir = "/shared/w"\n'
                 'log = "/shared/w/t-{attempt}.log"\n')
    r = object.__new__(SlurmReader)  # command() and parse() only: no session behind it
    r.job = JobRecord(attempt=1, scheduler="slurm", sched_id=job_id, log_path="/shared/w/t-1.log")
    r.ctx = SimpleNamespace(cfg=load_config(p))  # type: ignore[assignment]
    return r


def _out(job: str, acct: str | None) -> bytes:
    head = f"job={job}\n" + (f"acct={acct}\n" if acct is not None else "") + "queue=\nsize=120\nlog_mtime=1\nnow=1000\nnow_local=2026-12-02T10:00:00\n"
    return (head + "@@stat\n@@log\n").encode()


def test_an_ended_job_gets_sacct_evidence_where_there_is_accounting(tmp_path: Path) -> None:
    r = _reader(tmp_path, "4242")
    assert "sacct -j 4242 -n -P -o JobID,State,ExitCode,Elapsed,NodeList,MaxRSS" in r.command(0)
    line = "JobId=4242 JobName=x JobState=OUT_OF_MEMORY Reason=OutOfMemory ExitCode=0:125 RunTime=00:03:10 NodeList=gpu-node-[07-08]"
    st = r.parse(_out(line, SACCT_OOM.replace("\n", ";")))
    ev = st.scheduler_evidence()["slurm"]
    assert ev["source"] == "scontrol" and ev["sacct"] == {"state": "OUT_OF_MEMORY", "exit_code": "0:125", "elapsed": "00:03:10",
                                                          "max_rss": "65536000K"}
    assert "accounting" not in ev


def test_without_accounting_sacct_is_asked_once_then_said_once_in_the_evidence(tmp_path: Path) -> None:
    r = _reader(tmp_path, "4243")
    line = "JobId=4243 JobName=x JobState=FAILED Reason=NonZeroExitCode ExitCode=1:0 RunTime=00:00:07 NodeList=lab1"
    st = r.parse(_out(line, "sacct: error: Slurm accounting storage is disabled;"))
    ev = st.scheduler_evidence()["slurm"]
    assert ev["accounting"] == NO_ACCOUNTING and "sacct" not in ev and ev["state"] == "FAILED"  # scontrol's word stands
    assert "sacct" not in r.command(0)  # not asked again: silently scontrol and squeue
    again = r.parse(_out(line, None)).scheduler_evidence()["slurm"]
    assert again["accounting"] == NO_ACCOUNTING and again["exit_code"] == "1:0"


def test_a_running_job_does_not_ask_sacct(tmp_path: Path) -> None:
    cmd = _reader(tmp_path, "7").command(0)
    assert "*' JobState=RUNNING '*" in cmd and "*' JobState=PENDING '*" in cmd  # sacct only once it has ended


def _sh(script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=30, env={**os.environ, **(env or {})})


def test_the_node_cache_script_measures_removes_and_refuses_links(tmp_path: Path) -> None:
    from cockpit.core.slurm.cache import node_cache_script, parse_node_cache

    a, gone, link, target = tmp_path / "a b$(id)", tmp_path / "absent", tmp_path / "link", tmp_path / "target"
    (a / "k").mkdir(parents=True)
    (a / "k" / "f").write_bytes(b"x" * 20000)
    target.mkdir()
    (target / "keep").write_text("kept")
    link.symlink_to(target)
    paths = [str(a), str(gone), str(link)]
    r = _sh(node_cache_script(paths), {"SLURMD_NODENAME": "gpu-07"})
    rows = parse_node_cache(r.stdout, paths)
    # a link is refused and, one path being refused, nothing is removed on the node
    assert [(n, w, p) for n, w, _, p in rows] == [("gpu-07", "refused", str(link))], r.stdout
    assert r.returncode == 3 and (target / "keep").read_text() == "kept" and link.is_symlink() and a.exists()
    paths = [str(a), str(gone)]
    ok = _sh(node_cache_script(paths), {"SLURMD_NODENAME": "gpu-07"})
    rows = parse_node_cache(ok.stdout, paths)
    assert [(n, w, p) for n, w, _, p in rows] == [("gpu-07", "removed", str(a)), ("gpu-07", "absent", str(gone))]
    assert rows[0][2] is not None and rows[0][2] >= 20 and not a.exists()
    assert ok.returncode == 0


def _cfg(tmp_path: Path, extra: str) -> Any:
    p = tmp_path / "c.toml"
    p.write_text('[target]\nhost = "login"\nruntime = "slurm"\n[job]\ncommand = "python3 train.py"\nworkdir = "/shared/w"\n'
                 'log = "/shared/w/t-{attempt}.log"\n[cache]\npaths = ["/tmp/torchinductor_root", "/local/my cache"]\n' + extra)
    return load_config(p)


def test_the_generated_batch_script_clears_node_local_caches_on_every_node_first(tmp_path: Path) -> None:
    from cockpit.core.slurm.launch import job_script

    assert "cockpit-cache" not in job_script(_cfg(tmp_path, ""), 1)  # off by default: the shared file system
    script = job_script(_cfg(tmp_path, "[slurm]\nnode_local_cache = true\n"), 1)
    clear, exec_line = script.index("cockpit-cache"), script.index("exec /bin/sh -c")
    assert clear < exec_line
    line = next(x for x in script.splitlines() if "cockpit-cache" in x)
    words = shlex.split(line)
    assert words[:6] == ["srun", "--overlap", "--ntasks-per-node=1", "-N", "$SLURM_JOB_NUM_NODES", "--quiet"]
    assert "'/local/my cache'" in words[words.index("-c") + 1] and "exit 95" in line


def test_node_local_cache_paths_keep_the_safety_rules() -> None:
    """Checked again by the action (it can be handed any config object), as clear-cache does."""
    from cockpit.core.actions.base import StageFailed
    from cockpit.core.slurm.cache import safe_paths

    def cfg(*paths: str) -> Any:
        return SimpleNamespace(cache=SimpleNamespace(paths=list(paths)), job=SimpleNamespace(workdir="/shared/w"),
                               deploy=SimpleNamespace(dest="/shared/code"))

    for bad in ("/", "/home/alice", "/shared/w", "/shared", "/tmp/../etc", "/tmp/*", "relative"):
        with pytest.raises(StageFailed, match="refusing to clear"):
            safe_paths(cfg("/tmp/ok", bad))
    assert safe_paths(cfg("/tmp/./torchinductor_root/", "/local/my cache")) == ["/tmp/torchinductor_root", "/local/my cache"]


def test_gpus_of_each_node_are_merged_and_a_failed_node_named() -> None:
    from cockpit.core.probes.gpu.model import GPU, GPUProcess, GPUSnapshot
    from cockpit.core.slurm.gpus import merge_node_snapshots, parse_job_nodes

    one = GPUSnapshot(gpus=[GPU(index=0, name="H100", uuid="GPU-1")], processes=[GPUProcess(pid=5, gpu_index=0)])
    two = GPUSnapshot(gpus=[GPU(index=0, name="H100", uuid="GPU-1")], error="nvidia-smi timed out")
    snap = merge_node_snapshots([("gpu-01", one, ""), ("gpu-02", two, ""), ("gpu-03", None, "srun: error: Unable to create step")])
    assert [(g.node, g.index) for g in snap.gpus] == [("gpu-01", 0), ("gpu-02", 0)] and snap.processes[0].node == "gpu-01"
    assert snap.error == "gpu-02: nvidia-smi timed out"
    assert any(f.kind == "node-unreachable" and "gpu-03" in f.summary and f.subject["node"] == "gpu-03" for f in snap.findings)
    d = snap.to_dict()["gpus"][0]
    assert d["node"] == "gpu-01" and GPU.from_dict(d).node == "gpu-01"
    assert "node" not in GPU(index=0).to_dict() and GPU.from_dict(GPU(index=0).to_dict()).node == ""  # elsewhere: as before
    assert parse_job_nodes("lab1\nlab2\n") == ["lab1", "lab2"] and parse_job_nodes("") == []


def test_a_failed_nodes_scontrol_state_is_named() -> None:
    from cockpit.core.slurm.nodes import MARK, node_findings, parse_node_procs

    out = (f"{MARK} node gpu-02\n{MARK} pids\nsrun: error: Application launch failed: Communication connection failure\n"
           f"{MARK} failed gpu-02 1\n{MARK}-state NodeName=gpu-02 Arch=x86_64 CPUTot=64 State=DOWN+DRAIN+NOT_RESPONDING "
           "ThreadsPerCore=1 Reason=Not responding [slurm@2026-12-02T10:00:00]\n")
    nodes = parse_node_procs(out, "77")
    assert nodes is not None and nodes[0].state["State"] == "DOWN+DRAIN+NOT_RESPONDING"
    f = node_findings(nodes)[0]
    assert "gpu-02" in f.summary and "State=DOWN+DRAIN+NOT_RESPONDING Reason=Not responding" in f.summary, f.summary
    assert f.subject["node_state"] == "DOWN+DRAIN+NOT_RESPONDING"
