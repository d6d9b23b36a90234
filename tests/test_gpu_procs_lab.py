"""GPU memory per process, even inside a container, against the lab.

A job in a container with GPU passthrough shows with its memory under its container pid (host
query on the emulated Proxmox host, through the host session); a zombie, a host process, another
container and a dead pid holding memory are findings; without the host (a plain SSH target that
is a container, or lxc-info refused) the fd scan names the holders, and the pane says which method
it used; with sshd's MaxSessions at 2 the host's shell gives its channel back.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cockpit.core.probes.gpu import FD_SCAN, HOST_QUERY, is_na
from tests.lab import wait_for
from tests.test_gpu_procs import UUID

pytestmark = pytest.mark.lab

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
