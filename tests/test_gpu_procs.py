"""GPU memory per process, even inside a container: the units.

The ``/proc`` section and fd scan parsers (hostile and malformed input never crash, and never
make a process up), the owner classification and its findings, the host back-off.  Against the
lab: tests/test_gpu_procs_lab.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockpit.core.layers import Severity
from cockpit.core.probes.gpu import (
    FD_SCAN,
    GPUProcess,
    GPUSnapshot,
    NaType,
    apply_fdscan,
    container_of_cgroup,
    gpu_query_command,
    is_na,
    map_processes,
    memory_by_container_pid,
    parse_fdscan,
    parse_gpu_output,
    parse_proc_sections,
)
from tests.examples import examples

UUID = "GPU-5b2c8f9e-3a41-4c7d-9e0b-6f1d2a3b4c5d"  # the lab emulator's default H100

# -- units ---------------------------------------------------------------------------------------

PROXMOX = f"""@@cockpit-gpu v2
@@cockpit-gpu query-gpu index,uuid,memory.used,memory.total
| 0, {UUID}, 79000, 81559
@@cockpit-gpu rc 0
@@cockpit-gpu compute-apps pid,process_name,used_memory,gpu_uuid
| 91460, /usr/bin/python3, 70000, {UUID}
| 91451, [Not Found], 5000, {UUID}
| 4242, /usr/bin/python3, 3000, {UUID}
| 5555, /opt/conda/bin/python, 900, {UUID}
| 7777, /usr/bin/python3, 100, {UUID}
| 8888, /usr/bin/python3, 50, GPU-other-tenant
@@cockpit-gpu rc 0
@@cockpit-gpu procs
@@cockpit-gpu init 0
| 91200
@@cockpit-gpu pid 91200
| Name:\tsystemd
| State:\tS (sleeping)
| PPid:\t91190
| Threads:\t1
| NSpid:\t91200\t1
| cg 0::/lxc/200/ns/init.scope
@@cockpit-gpu pid 91460
| Name:\tpython3
| State:\tS (sleeping)
| PPid:\t91200
| Threads:\t48
| NSpid:\t91460\t312
| cg 0::/lxc/200/ns/system.slice/train.service
@@cockpit-gpu pid 91451
| Name:\tpython3
| State:\tZ (zombie)
| PPid:\t91200
| Threads:\t2
| NSpid:\t91451\t301
| cg 0::/lxc/200/ns/user.slice
@@cockpit-gpu pid 4242
| Name:\tpython3
| State:\tR (running)
| PPid:\t1
| Threads:\t1
| NSpid:\t4242
| cg 0::/user.slice/user-0.slice/session-3.scope
@@cockpit-gpu pid 5555
| Name:\tpython
| State:\tS (sleeping)
| PPid:\t5500
| Threads:\t9
| NSpid:\t5555\t77
| cg 0::/lxc/201/ns/init.scope
@@cockpit-gpu pid 7777
| gone
@@cockpit-gpu pid 8888
| Name:\tpython3
| State:\tS (sleeping)
| NSpid:\t8888\t5
| cg 0::/lxc/202/ns
@@cockpit-gpu ns
/proc/self/ns/pid 4026531836
/proc/91200/ns/pid 4026532611
/proc/91460/ns/pid 4026532611
/proc/91451/ns/pid 4026532611
/proc/4242/ns/pid 4026531836
/proc/5555/ns/pid 4026532700
@@cockpit-gpu end
"""


def test_host_pids_are_placed_in_the_container_and_judged() -> None:
    snap = parse_gpu_output(PROXMOX)
    map_processes(snap, snap.pid_table, 200)
    by_pid = {p.pid: p for p in snap.processes}
    # another tenant on a GPU this container does not have is none of its business
    assert 8888 not in by_pid
    job = by_pid[91460]
    assert (job.container_pid, job.owner, job.state, job.gpu_index) == (312, "container", "Sl", 0)
    assert (by_pid[91451].container_pid, by_pid[91451].state) == (301, "Zl")
    assert by_pid[4242].owner == "host" and is_na(by_pid[4242].container_pid)
    assert by_pid[5555].owner == "container 201"
    assert by_pid[7777].owner == "gone"
    kinds = {f.kind: f for f in snap.findings}
    assert set(kinds) == {"gpu-memory-zombie", "gpu-memory-outside", "gpu-memory-dead-pid"}
    zombie = kinds["gpu-memory-zombie"]
    assert zombie.severity is Severity.ERROR and "pid 301 (host pid 91451)" in zombie.summary and "Zl" in zombie.summary
    assert "pct reboot 200" in zombie.advice and "thread" in zombie.advice
    outside = [f for f in snap.findings if f.kind == "gpu-memory-outside"]
    assert len(outside) == 2 and all(f.severity is Severity.WARNING for f in outside)
    assert any("on the host" in f.summary and "4242" in f.summary for f in outside)
    assert any("container 201" in f.summary for f in outside)
    assert "7777" in kinds["gpu-memory-dead-pid"].summary
    assert memory_by_container_pid(snap) == {312: 70000, 301: 5000}
    d = snap.to_dict()
    assert d["processes"][0]["container_pid"] == 312 or any(p["container_pid"] == 312 for p in d["processes"])


def test_on_a_plain_target_the_pids_are_its_own() -> None:
    snap = parse_gpu_output(PROXMOX)
    map_processes(snap, snap.pid_table, None)
    assert {p.owner for p in snap.processes} == {"target", "gone"} and len(snap.processes) == 6
    assert sorted(f.kind for f in snap.findings) == ["gpu-memory-dead-pid", "gpu-memory-zombie"]
    z = next(f for f in snap.findings if f.kind == "gpu-memory-zombie")
    assert "pct reboot" not in z.advice and "pid 91451" in z.summary


def test_when_the_container_sees_no_gpu_only_its_own_processes_are_kept() -> None:
    # the GPU query inside failed: the host's list cannot say which GPUs are the container's
    text = PROXMOX.replace(f"| 0, {UUID}, 79000, 81559\n@@cockpit-gpu rc 0", "| Failed to initialize NVML: Unknown Error\n@@cockpit-gpu rc 255")
    snap = parse_gpu_output(text)
    assert snap.gpus == [] and snap.error
    map_processes(snap, snap.pid_table, 200)
    assert sorted(p.container_pid for p in snap.processes) == [301, 312]
    assert not [f for f in snap.findings if f.kind in ("gpu-memory-outside", "gpu-memory-dead-pid")]


def test_a_plain_zombie_names_the_parent_that_must_reap_it() -> None:
    text = PROXMOX.replace("| Threads:\t2\n", "| Threads:\t1\n").replace(
        "@@cockpit-gpu ns", "@@cockpit-gpu pid 91200\n| Name:\tsleepy-init\n@@cockpit-gpu ns")
    snap = parse_gpu_output(text)
    map_processes(snap, snap.pid_table, 200)
    z = next(f for f in snap.findings if f.kind == "gpu-memory-zombie")
    assert "(Z)" in z.summary or ", Z)" in z.summary
    assert "parent 91190" not in z.advice and "91200" in z.advice and "must reap" in z.advice


def test_without_the_init_the_cgroup_places_a_process_and_nested_namespaces_count() -> None:
    # lxc-info refused, no pid namespaces readable: Proxmox's cgroup still says where each one is
    text = PROXMOX.replace("@@cockpit-gpu init 0\n| 91200\n", "@@cockpit-gpu init 1\n| Insufficent privileges to control 200\n")
    text = text[: text.index("@@cockpit-gpu ns")] + "@@cockpit-gpu ns\n@@cockpit-gpu end\n"
    table = parse_proc_sections(text)
    assert table is not None and table.init_pid is None and "Insufficent" in (table.init_error or "")
    snap = parse_gpu_output(text)
    map_processes(snap, snap.pid_table, 200)
    by_pid = {p.pid: p for p in snap.processes}
    assert (by_pid[91460].owner, by_pid[91460].container_pid) == ("container", 312)
    assert by_pid[4242].owner == "unknown"  # no namespace, no lxc cgroup: not claimed as "outside"
    assert not [f for f in snap.findings if f.kind == "gpu-memory-outside" and "4242" in f.summary]


@pytest.mark.parametrize("path, expect", [
    ("/lxc/200/ns/init.scope", ("lxc", "200")),
    ("/lxc/200", ("lxc", "200")),
    ("/lxc.payload.201/system.slice", ("lxc", "201")),
    ("/lxc.monitor/200", None),  # the monitor runs on the host, not in the container
    ("/system.slice/docker-3f2a9b1c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8.scope", ("docker", "3f2a9b1c4d5e")),
    ("/docker/3f2a9b1c4d5e6f70", ("docker", "3f2a9b1c4d5e")),
    ("/user.slice/user-0.slice", None),
    ("/lxc/20/x", None),
    ("", None),
    (None, None),
])
def test_container_of_cgroup(path: str | None, expect: tuple[str, str] | None) -> None:
    assert container_of_cgroup(path) == expect


def test_a_tenant_cannot_forge_frames(tmp_path: Path) -> None:
    """A process name holding newlines and frame lines (nvidia-smi prints it as it is) stays data:
    no frame ends early, no exit status, pid section or "gone" pid is made up; a container root's
    cgroup name with a newline adds nothing either."""
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"""#!/bin/sh
case "$1" in
--query-gpu=*) echo "0, NVIDIA H100, {UUID}, 00000000:01:00.0, 550, P0, 30, 5, 1, 70000, 81559, 100, 700, [N/A], Disabled, 0";;
--query-compute-apps=*) printf '%s\\n' "$$, /tmp/x" "@@cockpit-gpu rc 9" "@@cockpit-gpu procs" "@@cockpit-gpu pid 31337" \
  "| gone" "@@cockpit-gpu end, 70000, {UUID}";;
esac
""")
    smi.chmod(0o755)
    r = subprocess.run(["/bin/sh", "-c", gpu_query_command(str(smi), 5, describe=True)], capture_output=True, text=True, timeout=30)
    snap = parse_gpu_output(r.stdout, r.stderr, r.returncode)
    assert snap.exit_codes == {"query-gpu": 0, "compute-apps": 0} and snap.gpus[0].memory_used_mib == 70000
    assert snap.pid_table is not None and 31337 not in snap.pid_table.pids
    assert [f.kind for f in snap.findings] == ["unparsed-output"]  # the broken rows are said, not believed
    # a cgroup name with a newline: only the first line, written by the host, is believed
    text = PROXMOX.replace("| cg 0::/lxc/200/ns/system.slice/train.service",
                           "| cg 0::/lxc/200/ns/evil\n| cg 0::/lxc/999/")
    table = parse_proc_sections(text)
    assert table is not None and table.pids[91460].cgroup == "/lxc/200/ns/evil"


FDSCAN = """@@cockpit-gpu fdscan
| dir /proc/1/fd:
| dir /proc/57/fd:
| fd /dev/nvidia0
| fd /dev/nvidiactl
| fd /dev/nvidia-uvm
| fd /dev/nvidia0
| dir /proc/58/fd:
| fd /dev/null
| dir /proc/301/task/302/fd:
| fd /dev/nvidia1
| dir /proc/x/fd:
| fd /dev/nvidia7
| fd /dev/nvidia0; rm -rf /
@@cockpit-gpu end
"""


def test_fd_scan_names_the_holders_without_amounts() -> None:
    holders = parse_fdscan(FDSCAN)
    assert holders == {57: ["nvidia0", "nvidiactl", "nvidia-uvm"], 301: ["nvidia1"]}
    assert parse_fdscan("nothing ran") is None
    from cockpit.core.probes.procs import Proc

    procs = [Proc(57, 1, 57, 57, "Sl", 60, 99.0, 1 << 20, "root", "python3", "python3 train.py"),
             Proc(301, 1, 301, 301, "Zl", 60, 0.0, 0, "root", "python3", "[python3] <defunct>")]
    snap = GPUSnapshot()
    apply_fdscan(snap, holders, procs)
    by_pid = {p.pid: p for p in snap.processes}
    assert by_pid[57].devices == "nvidia0,nvidiactl,nvidia-uvm" and by_pid[57].gpu_index == 0
    assert is_na(by_pid[57].used_memory_mib) and "fd scan" in by_pid[57].used_memory_mib.reason
    assert by_pid[301].state == "Zl" and [f.kind for f in snap.findings] == ["gpu-memory-zombie"]
    assert all(isinstance(v, NaType) for v in memory_by_container_pid(snap).values())


async def test_a_host_that_cannot_be_asked_is_left_alone_for_a_while() -> None:
    from cockpit.core.probes.gpu import GpuProbe, ProcessProbe

    gpu_only = PROXMOX[: PROXMOX.index("@@cockpit-gpu compute-apps")]
    scan = "@@cockpit-gpu fdscan\n| dir /proc/312/fd:\n| fd /dev/nvidia0\n@@cockpit-gpu end\n"
    calls: list[str] = []

    async def target(cmd: str):
        calls.append("target" + (" +scan" if "fdscan" in cmd else ""))
        return (gpu_only + scan if "fdscan" in cmd else gpu_only), "", 0

    async def host(cmd: str):
        calls.append("host")
        raise OSError("channel refused")

    probe, gpu = ProcessProbe(200), GpuProbe("nvidia-smi")
    snap = await probe.run(gpu, target, host, 5)
    assert snap.method == FD_SCAN and snap.method_note == "host query unavailable: the host could not run it: channel refused"
    assert [(p.pid, p.devices) for p in snap.processes] == [(312, "nvidia0")] and not gpu.apps
    assert calls == ["target", "host", "target +scan"]
    calls.clear()
    snap = await probe.run(gpu, target, host, 5)  # within the minute: no host, the scan in the one command
    assert calls == ["target +scan"] and snap.method == FD_SCAN
    probe.host_down_until = 0
    calls.clear()
    await probe.run(gpu, target, host, 5)
    assert "host" in calls


lines = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
SNIPPETS = [
    "@@cockpit-gpu procs", "@@cockpit-gpu init 0", "@@cockpit-gpu init 1", "@@cockpit-gpu pid 91460",
    "@@cockpit-gpu pid 99999999999999", "@@cockpit-gpu ns", "@@cockpit-gpu end", "| 91200", "| gone",
    "| NSpid:\t91460\t312", "| NSpid:\t-1\tx", "| NSpid:\t" + "9" * 40, "| State:\tZ (zombie)", "| State:\t",
    "| Threads:\tmany", "| PPid:\t", "| cg 0::/lxc/200/ns", "| cg garbage", "/proc/self/ns/pid 4026531836",
    "/proc/91460/ns/pid 99999999999999999999999", "@@cockpit-gpu fdscan", "| dir /proc/57/fd:", "| fd /dev/nvidia0",
    f"| 91460, /usr/bin/python3, 70000, {UUID}", "@@cockpit-gpu compute-apps pid,process_name,used_memory,gpu_uuid",
    "@@cockpit-gpu rc 0", "@@cockpit-gpu v2",
]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(lines, st.sampled_from(SNIPPETS)), max_size=40), st.sampled_from([None, 200, 7]))
def test_hostile_or_malformed_output_never_crashes(parts: list[str], container: int | None) -> None:
    text = "\n".join(parts)
    snap = parse_gpu_output(text)
    map_processes(snap, parse_proc_sections(text), container)
    holders = parse_fdscan(text)
    if holders is not None:
        apply_fdscan(snap, holders, [])
    memory_by_container_pid(snap)
    snap.to_dict()
    for f in snap.findings:
        f.to_dict()
    for p in snap.processes:
        GPUProcess.from_dict(p.to_dict())
