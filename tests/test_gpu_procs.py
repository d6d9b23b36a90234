"""GPU memory per process, even inside a container.

Units: the ``/proc`` section and fd scan parsers (hostile and malformed input never crash, and
never make a process up), the owner classification and its findings.  Lab: a job in a container
with GPU passthrough shows with its memory under its container pid (host query on the emulated
Proxmox host, through the host session); a zombie, a host process and a dead pid holding memory
are findings; without the host (a plain SSH target that is a container, or lxc-info refused) the
fd scan names the holders, and the pane says which method it used.
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
    HOST_QUERY,
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
from tests.lab import wait_for

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

    probe, gpu = ProcessProbe("pct", 200), GpuProbe("nvidia-smi")
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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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


# -- the lab ---------------------------------------------------------------------------------------

GPU_CT = 210


@pytest.fixture(scope="module")
def gpu_ct(lab):
    """Container 210 with /dev/nvidia0, nvidiactl and nvidia-uvm passed through (Proxmox style)."""
    from tests.lab.gpu import add_gpu_container

    add_gpu_container(lab, GPU_CT)
    yield GPU_CT
    lab.remove_container(GPU_CT)


class Jobs:
    """GPU jobs started in containers for one test; each process group is killed afterwards."""

    def __init__(self, lab):
        self.lab, self.started = lab, []

    def start(self, ctid: int, *args: object) -> int:
        r = self.lab.exec_in(ctid, f"setsid {self.lab.jobsim_command(*args)} </dev/null >/dev/null 2>&1 & echo $!", check=True)
        pid = int(r.stdout.strip())
        self.started.append((ctid, pid))
        return pid

    def stop(self) -> None:
        for ctid, pid in self.started:  # the job's process group (its ranks), then the job itself
            self.lab.exec_in(ctid, f"kill -9 -{pid} 2>/dev/null; kill -9 {pid} 2>/dev/null; true")
        for ctid, pid in self.started:
            wait_for(lambda c=ctid, p=pid: self.lab.exec_in(c, f"test -e /proc/{p}/fd/0 || echo gone").stdout, 10)


@pytest.fixture
def jobs(lab):
    j = Jobs(lab)
    yield j
    j.stop()
    lab.reset_gpu_state()


def contexts(lab, n: int) -> None:
    """Wait until the emulated driver has ``n`` live contexts (the jobs attached)."""
    q = [str(lab.nvidia_smi), "--query-compute-apps=pid", "--format=csv,noheader"]
    wait_for(lambda: len(subprocess.run(q, capture_output=True, text=True).stdout.split()) == n, 20,
             message=lambda: subprocess.run(q, capture_output=True, text=True).stdout)


async def refresh(engine):
    obs = engine.observer
    await obs.refresh_procs()
    view = await obs.refresh_gpu()
    assert view.error is None and view.snapshot is not None, view.to_dict()
    return view.snapshot


@pytest.mark.lab
def test_the_emulators_behave_like_a_proxmox_host(lab, gpu_ct, jobs) -> None:
    lxc_info = str(lab.bin_dir / "lxc-info")
    init = lab.container_init_pid(gpu_ct)
    assert subprocess.run([lxc_info, "-n", str(gpu_ct), "-p", "-H"], capture_output=True, text=True).stdout == f"{init}\n"
    assert subprocess.run([lxc_info, "-n", str(gpu_ct), "-p"], capture_output=True, text=True).stdout == f"PID:            {init}\n"
    gone = subprocess.run([lxc_info, "-n", "299", "-p", "-H"], capture_output=True, text=True)
    assert (gone.returncode, gone.stderr) == (1, "299 doesn't exist\n")
    assert "lxc.mount.entry: " in lab.pct("config", gpu_ct).stdout
    assert lab.exec_in(gpu_ct, "test -e /dev/nvidia0 && test -c /dev/null && echo ok").stdout == "ok\n"
    assert lab.exec_in(200, "test -e /dev/nvidia0 || echo none").stdout == "none\n"  # no passthrough there
    pid = jobs.start(gpu_ct, "--gpu-mem", 70000, "--steps", 0)
    contexts(lab, 1)
    q = [str(lab.nvidia_smi), "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]
    host_pid, mem = subprocess.run(q, capture_output=True, text=True).stdout.strip().split(", ")
    assert mem == "70000" and int(host_pid) != pid
    nspid = next(ln for ln in Path(f"/proc/{host_pid}/status").read_text().splitlines() if ln.startswith("NSpid:"))
    assert nspid.split()[1:] == [host_pid, str(pid)]
    assert lab.exec_in(gpu_ct, q).stdout == ""  # in the container the driver lists nothing, as real ones do
    used = lab.exec_in(gpu_ct, [str(lab.nvidia_smi), "--query-gpu=memory.used", "--format=csv,noheader,nounits"]).stdout
    assert int(used) >= 70000  # the memory shows everywhere


@pytest.mark.lab
async def test_a_job_in_the_container_shows_with_its_memory_under_its_container_pid(lab, lab_config, engines, gpu_ct, jobs):
    main = jobs.start(gpu_ct, "--gpu-mem", 30000, "--gpu-procs", 2, "--steps", 0)
    contexts(lab, 2)
    eng = engines(lab_config(target={"container": gpu_ct}))
    snap = await refresh(eng)
    assert snap.method == HOST_QUERY and f"container {gpu_ct}" in snap.method_note
    mine = {p.container_pid: p for p in snap.processes}
    assert main in mine and len(mine) == 2 and all(p.owner == "container" and p.used_memory_mib == 30000 for p in mine.values())
    assert all(p.pid != p.container_pid for p in mine.values())  # the driver's pids were the host's
    assert not [f for f in snap.findings if f.kind.startswith("gpu-memory")]
    ps_pids = {p.pid for p in eng.observer.procs.procs}
    assert set(mine) <= ps_pids and eng.observer.procs.gpu_mib == {pid: 30000 for pid in mine}
    assert eng.observer.host.session is not None and eng.observer.host.session.alive  # the host's persistent shell
    # the TUI: the method above the list, the container pids with their memory, the GPU column
    from cockpit.ui.app import create_app
    from cockpit.ui.panes import GpuPane, ProcsPane
    from tests.test_ui_support import wait_for as ui_wait

    app = create_app(eng.cfg, engine=eng, refresh=False)
    async with app.run_test(size=(140, 40)) as pilot:
        gpu, procs = app.query_one(GpuPane), app.query_one(ProcsPane)
        await ui_wait(pilot, lambda: procs.table.row_count > 0 and procs.gpu_col, what="the process table")
        text = gpu.procs_text().plain
        assert text.startswith("per-process memory: host query") and f"{main:<8}" in text and "29.3G" in text
        assert "29.3G" in [str(c) for c in procs.table.get_row(str(main))]


@pytest.mark.lab
async def test_zombie_host_process_and_dead_pid_holding_memory_are_findings(lab, lab_config, engines, gpu_ct, jobs):
    from tests.lab.gpu import host_gpu_user

    zombie = jobs.start(gpu_ct, "--gpu-mem", 5000, "--crash", "zl", "--crash-at", 1, "--steps", 0, "--interval", 0.05)
    jobs.start(200, "--gpu-mem", 900, "--steps", 0)  # another tenant on the same GPU
    lab.set_gpu_state("normal", apps=[{"pid": 4194000, "process_name": "/usr/bin/python3", "used_memory": 1234, "gpu_uuid": UUID}])
    stray = host_gpu_user(lab, 3000)
    try:
        contexts(lab, 4)
        eng = engines(lab_config(target={"container": gpu_ct}))
        await eng.observer.refresh_procs()

        async def settled():
            snap = await refresh(eng)
            z = [p for p in snap.processes if p.container_pid == zombie]
            return snap if z and z[0].state == "Zl" else None

        from tests.lab import await_for

        snap = await await_for(settled, 20, interval=0.3)
        found = {}
        for f in snap.findings:
            found.setdefault(f.kind, []).append(f)
        (z,) = found["gpu-memory-zombie"]
        assert f"pid {zombie} (host pid" in z.summary and "Zl" in z.summary and "5000 MiB" in z.summary
        assert f"pct reboot {gpu_ct}" in z.advice
        outside = {f.subject["pid"]: f for f in found["gpu-memory-outside"]}
        assert "on the host" in outside[stray.pid].summary and f"-p {stray.pid}" in outside[stray.pid].advice
        other = [f for pid, f in outside.items() if pid != stray.pid]
        assert len(other) == 1 and "another PID namespace" in other[0].summary and "900 MiB" in other[0].summary
        (dead,) = found["gpu-memory-dead-pid"]
        assert "4194000" in dead.summary and "1234 MiB" in dead.summary
        # the pane says the same, row by row
        from cockpit.ui.panes.gpu import _row_note

        notes = {p.pid: _row_note(p, p.owner if p.owner not in ("container", "target") else None) for p in snap.processes}
        assert notes[stray.pid] == f"outside: host, host pid {stray.pid}"
        assert notes[4194000].startswith("gone")
    finally:
        stray.kill()
        stray.wait()


@pytest.mark.lab
async def test_without_the_host_the_fd_scan_names_the_holders(lab, lab_config, engines, gpu_ct, jobs):
    """A plain SSH target that is a container (an sshd of its own inside it): nvidia-smi lists
    nothing there, so the processes holding /dev/nvidia* are found by an fd scan."""
    from tests.lab.gpu import container_sshd

    main = jobs.start(gpu_ct, "--gpu-mem", 20000, "--steps", 0)
    contexts(lab, 1)
    with container_sshd(lab, gpu_ct) as (port, known):
        eng = engines(lab_config(target={"runtime": "none", "container": None, "port": port}, ssh={"known_hosts": str(known)}))
        snap = await refresh(eng)
        assert snap.method == FD_SCAN and "nvidia-smi lists no process" in snap.method_note
        (p,) = [p for p in snap.processes if p.pid == main]
        assert p.devices == "nvidia0,nvidiactl,nvidia-uvm" and is_na(p.used_memory_mib) and "jobsim" in str(p.process_name)
        assert eng.observer.procs.gpu_mib.keys() == {main}
        assert "memory-unlisted" not in " ".join(f.kind for f in snap.findings)
        from cockpit.ui.panes.gpu import METHODS

        assert METHODS[FD_SCAN] == "processes holding /dev/nvidia*: fd scan (no per-process memory)"


@pytest.mark.lab
async def test_a_host_that_refuses_lxc_info_falls_back_and_says_why(lab, lab_config, engines, gpu_ct, jobs):
    main = jobs.start(gpu_ct, "--gpu-mem", 20000, "--steps", 0)
    contexts(lab, 1)
    lab.set_container_option(gpu_ct, lxc_info_error=f"Insufficent privileges to control {gpu_ct}")
    try:
        eng = engines(lab_config(target={"container": gpu_ct}))
        snap = await refresh(eng)
        assert snap.method == FD_SCAN
        assert snap.method_note == f"host query unavailable: lxc-info on the host: Insufficent privileges to control {gpu_ct}"
        assert [p.pid for p in snap.processes] == [main]
        # not asked again on every refresh: no host command, and the scan rides in the GPU command (one trip)
        sent: dict[str, list[str]] = {"host": [], "target": []}

        def spy(where: str, real):
            async def run(cmd: str, **kw):
                sent[where].append(cmd)
                return await real(cmd, **kw)
            return run

        eng.observer.host.run = spy("host", eng.observer.host.run)  # type: ignore[method-assign]
        eng.transport.run = spy("target", eng.transport.run)  # type: ignore[method-assign]
        await eng.observer.refresh_gpu()
        snap = eng.observer.gpu.snapshot
        assert snap is not None and snap.method == FD_SCAN and [p.pid for p in snap.processes] == [main]
        assert sent["host"] == [] and len(sent["target"]) == 1 and "--query-gpu" in sent["target"][0]
    finally:
        lab.set_container_option(gpu_ct, lxc_info_error=None)


@pytest.mark.lab
async def test_the_host_shell_gives_its_channel_back_when_sshd_allows_few(lab, lab_config, engines, gpu_ct, jobs):
    """MaxSessions 2 (the target's session and one more): the host's shell takes the one more,
    until another channel is refused; then it gives it back at once, and the host query goes on
    through channels of its own.  Nothing waits for ever."""
    import asyncio

    main = jobs.start(gpu_ct, "--gpu-mem", 20000, "--steps", 0)
    contexts(lab, 1)
    lab.set_max_sessions(2)
    try:
        eng = engines(lab_config(target={"container": gpu_ct}))
        snap = await refresh(eng)
        assert snap.method == HOST_QUERY and eng.observer.host.session is not None
        kmsg = await asyncio.wait_for(eng.observer.refresh_kmsg(), 20)  # a host channel: refused, then it runs
        assert kmsg.error is None, kmsg.error
        assert eng.observer.host.session is None and eng.transport.slots.learned is not None  # gave way, learned
        snap = await asyncio.wait_for(refresh(eng), 20)
        assert snap.method == HOST_QUERY and [p.container_pid for p in snap.processes] == [main]
        assert eng.observer.host.session is None  # not kept again while sshd allows so few
    finally:
        lab.set_max_sessions(10)
