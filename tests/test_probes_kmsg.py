"""kmsg: host kernel messages (OOM kills, Xid, hung tasks, segfaults)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cockpit.core.layers import Layer, Severity
from cockpit.core.probes.kmsg import XID_MEANINGS, kmsg_command, oom_killed, parse_kmsg, xid_meaning

FIX = Path(__file__).parent / "fixtures" / "kmsg"


def load(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


def summary(findings) -> list[tuple[str, str, str]]:
    return [(f.kind, f.layer.value, f.severity.value) for f in findings]


def test_proxmox_iso() -> None:
    rep = parse_kmsg(load("pve_oom_xid_iso.txt"))
    assert rep.source == "dmesg-iso" and rep.boot_time == 1736812800 and rep.error is None
    assert summary(rep.findings) == [
        ("oom-kill", "container", "error"),
        ("xid", "gpu", "error"),
        ("xid", "gpu", "info"),
        ("hung-task", "gpu", "error"),
        ("xid", "gpu", "error"),
    ]
    oom = rep.findings[0]
    s = oom.subject
    assert (s["pid"], s["comm"], s["container"], s["constraint"], s["memcg"]) == (91452, "python3", "200", "CONSTRAINT_MEMCG", True)
    assert s["anon_rss_kb"] == 131234567 and s["total_vm_kb"] == 187654321 and s["uid"] == 0
    assert s["task_memcg"] == "/lxc/200/ns/system.slice/cockpit-train.service"
    assert s["ts"] == pytest.approx(1736813998.4136)  # 01:19:58.4136 +01:00
    assert "container 200" in oom.summary and "memory cgroup" in oom.summary and "125.2 GiB" in oom.summary
    assert "pct set" in oom.advice
    x31 = rep.findings[1]
    assert x31.subject["xid"] == 31 and x31.subject["count"] == 2 and x31.summary.endswith("×2")
    assert (x31.subject["pid"], x31.subject["name"], x31.subject["bus_id"]) == (91451, "python3", "0000:18:00")
    assert "MMU Fault" in x31.subject["message"]
    hung = rep.findings[3]
    assert hung.subject == {**hung.subject, "pid": 91460, "comm": "python3", "blocked_s": 122, "nvidia": True}
    x79 = rep.findings[4]
    assert x79.subject["xid"] == 79 and "fallen off the bus" in x79.summary
    # the "NVRM: GPU … has fallen off the bus" line that follows is not reported twice
    assert [f.kind for f in rep.findings].count("gpu-lost") == 0


def test_raw_dmesg_host() -> None:
    rep = parse_kmsg(load("raw_host_oom_segv.txt"))
    assert rep.source == "dmesg-raw"
    assert summary(rep.findings) == [
        ("segfault", "app", "error"),
        ("segfault", "app", "error"),
        ("oom-kill", "container", "error"),
        ("oom-kill", "container", "error"),
        ("xid", "gpu", "error"),
        ("xid", "gpu", "error"),
        ("xid", "gpu", "error"),
        ("hung-task", "process", "error"),
    ]
    seg = rep.findings[0].subject
    assert (seg["pid"], seg["comm"], seg["lib"]) == (4321, "python3", "libtorch_cuda.so")
    assert seg["ts"] == pytest.approx(1700000000 + 4987.120001) and seg["uptime"] == pytest.approx(4987.120001)
    old_oom = rep.findings[2]
    assert old_oom.subject["pid"] == 5555 and old_oom.subject["container"] is None
    assert "host ran out of memory" in old_oom.summary
    payload = rep.findings[3]
    assert payload.subject["container"] == "201" and payload.subject["comm"] == "a-very-long-pro"
    x13 = rep.findings[4].subject
    assert x13["xid"] == 13 and x13["pid"] is None and x13["name"] is None and "Out Of Range" in x13["message"]
    assert rep.findings[5].subject["xid"] == 62 and rep.findings[5].subject["bus_id"] == "0000:3b:00"
    assert rep.findings[6].subject["xid"] == 119
    assert rep.findings[7].subject["comm"] == "jbd2/sda1-8"


def test_journal_format() -> None:
    rep = parse_kmsg(load("journal_short_iso.txt"))
    assert rep.source == "journal" and rep.boot_time is None
    assert [f.kind for f in rep.findings] == ["oom-kill", "xid"]
    assert rep.findings[0].subject["ts"] == pytest.approx(1740906900.0)  # 10:15 +0100
    assert rep.findings[1].subject["xid"] == 48 and rep.findings[1].severity is Severity.ERROR


def test_unavailable() -> None:
    rep = parse_kmsg(load("unavailable.txt"))
    assert rep.findings == [] and "Operation not permitted" in rep.error


def test_plain_text_without_frames() -> None:
    rep = parse_kmsg("[  12.5] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n", boot_time=100.0)
    assert rep.findings[0].subject["ts"] == pytest.approx(112.5)
    assert rep.findings[0].subject["pid"] is None


def test_old_gpu_lost_without_xid() -> None:
    rep = parse_kmsg("[1.0] NVRM: GPU 0000:02:00.0: GPU has fallen off the bus.\n")
    assert summary(rep.findings) == [("gpu-lost", "gpu", "error")]


def test_oom_killed_helper() -> None:
    findings = parse_kmsg(load("pve_oom_xid_iso.txt")).findings + parse_kmsg(load("raw_host_oom_segv.txt")).findings
    assert oom_killed(findings, 91452).subject["container"] == "200"
    assert oom_killed(findings, "python3").subject["pid"] == 91452  # the latest python3 kill
    assert oom_killed(findings, "python3", since=1736813999) is None
    assert oom_killed(findings, "python3", since=1736813000).subject["pid"] == 91452
    assert oom_killed(findings, "python3", container=201) is not None  # unknown containers still count
    assert oom_killed(findings, "python3", container=200).subject["pid"] == 91452
    assert oom_killed(findings, "a-very-long-process-name").subject["pid"] == 6666  # comm keeps 15 chars
    assert oom_killed(findings, "a-very-long-process-name", container=200) is None
    assert oom_killed(findings, 1) is None and oom_killed([], "x") is None


def test_xid_table() -> None:
    for n in (13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95):
        assert n in XID_MEANINGS and XID_MEANINGS[n][2]
    assert xid_meaning(79) == "GPU has fallen off the bus" and "catalogue" in xid_meaning(9999)


def test_unknown_xid() -> None:
    rep = parse_kmsg("[1.0] NVRM: Xid (PCI:0000:01:00): 9999, pid=1, name=x, something\n")
    assert rep.findings[0].layer is Layer.GPU and "catalogue" in rep.findings[0].summary


def test_command_runs_here() -> None:
    cmd = kmsg_command(lines=20, timeout=3)
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    rep = parse_kmsg(out.stdout)
    assert rep.source in ("dmesg-iso", "dmesg-raw", "journal", "unavailable")
    assert rep.line_count <= 20
    assert "'dmesg'" not in cmd and "dmesg --time-format iso" in cmd and "journalctl -k -o short-iso" in cmd
    assert "'/opt/my dmesg'" in kmsg_command(dmesg="/opt/my dmesg")


def test_the_names_an_oom_report_may_give_the_job_include_torchs_main_thread():
    from cockpit.core.actions.cause import TORCH_MAIN_THREAD, victim_names
    from cockpit.core.actions.jobrecord import JobRecord

    assert victim_names(JobRecord(command="/usr/bin/python3 train.py"), "") == ["python3", TORCH_MAIN_THREAD]
    # what verify saw of the main process first, then the command's first word
    assert victim_names(JobRecord(command="sh train.sh", main_comm="python3"), "") == ["python3", "sh", TORCH_MAIN_THREAD]
    assert victim_names(JobRecord(command="./train", main_comm="train"), "") == ["train"]
    assert victim_names(JobRecord(command="'unclosed"), "") == ["'unclosed"]  # unsplittable: no crash
