"""The lab is only useful if it behaves like the real thing: these tests prove it does.

Real sshd with generated keys and a strict known_hosts; pct exec in a different PID + mount
namespace with real pct texts and exit codes; a PID 1 that does not reap (the seed's zombie) and a
reboot that clears it; nvidia-smi formats and failure modes; jobsim crashes with the right last
lines and exit statuses.  No fixed sleeps: every wait is a condition with a deadline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomllib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lab import Lab, wait_for
from tests.lab.sshd import lab_unavailable_reason
from tests.lab.util import pid_alive

pytestmark = pytest.mark.lab

JOBSIM = Path(__file__).parent / "lab" / "jobsim.py"
CT = 200


def ps(lab: Lab, ctid: int) -> list[dict[str, str]]:
    """Processes inside a container: pid, ppid, stat, comm."""
    r = lab.exec_in(ctid, ["ps", "-eo", "pid=,ppid=,stat=,comm="], check=True)
    rows = []
    for line in r.stdout.splitlines():
        pid, ppid, stat, comm = line.split(None, 3)
        rows.append({"pid": pid, "ppid": ppid, "stat": stat, "comm": comm})
    return rows


@pytest.fixture(scope="module")
def noreap(lab: Lab):
    """Container 201 whose PID 1 (sleepy-init) never reaps orphans."""
    ctid = lab.add_container(201, reaping_init=False)
    yield ctid
    lab.remove_container(ctid)


# ------------------------------------------------------------------------------------------ sshd


def test_sshd_accepts_the_generated_key_and_known_hosts(lab: Lab) -> None:
    r = lab.ssh("echo ok; id -u")
    assert (r.returncode, r.stdout) == (0, "ok\n0\n"), r.stderr
    line = lab.known_hosts.read_text().strip()
    assert re.fullmatch(rf"\[127\.0\.0\.1\]:{lab.port} ssh-ed25519 AAAA\S+", line)
    assert oct(lab.identity_file.stat().st_mode & 0o777) == "0o600"


def test_pct_and_nvidia_smi_are_on_the_ssh_path(lab: Lab) -> None:
    r = lab.ssh("command -v pct; command -v nvidia-smi; pct status 200")
    assert r.stdout.splitlines() == [str(lab.bin_dir / "pct"), str(lab.bin_dir / "nvidia-smi"), "status: running"]


def test_ssh_config_alias(lab: Lab) -> None:
    r = subprocess.run(["ssh", "-F", str(lab.ssh_config), "cockpit-lab", "echo alias"],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert (r.returncode, r.stdout) == (0, "alias\n"), r.stderr


def test_changed_host_key_is_refused(fresh_lab: Lab) -> None:
    lab = fresh_lab
    old_port = lab.port
    lab.regenerate_host_key()
    assert lab.port == old_port
    r = lab.ssh("true")
    assert r.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in r.stderr
    lab.write_known_hosts()
    assert lab.ssh("true").returncode == 0


def test_sshd_down_then_back_on_the_same_port(fresh_lab: Lab) -> None:
    lab = fresh_lab
    port = lab.port
    lab.stop()
    r = lab.ssh("true")
    assert r.returncode == 255 and "Connection refused" in r.stderr
    assert lab.container_running(CT), "a dead sshd must not take the containers with it"
    lab.start()
    assert lab.port == port
    assert lab.ssh("pct status 200").stdout == "status: running\n"


async def test_asyncssh_persistent_shell_in_container(lab: Lab) -> None:
    asyncssh = pytest.importorskip("asyncssh")
    async with asyncssh.connect(**lab.asyncssh_options()) as conn:
        proc = await conn.create_process("pct exec 200 -- /bin/sh")
        for i in range(3):
            proc.stdin.write(f"echo $$ {i}; (exit {i}); echo rc=$?\n")
            pid, n = (await proc.stdout.readline()).split()
            assert int(pid) > 1 and n == str(i)
            assert (await proc.stdout.readline()) == f"rc={i}\n"
        proc.stdin.write("exit 5\n")
        result = await proc.wait()
        assert result.exit_status == 5
        assert lab.drop_connections() >= 1
        with pytest.raises((asyncssh.Error, OSError)):
            await conn.run("true", check=True)


# ----------------------------------------------------------------------------------------- pct


def test_pct_exec_runs_in_its_own_pid_and_mount_namespace(lab: Lab) -> None:
    host_marker = Path("/tmp") / f"lab-host-only-{os.getpid()}"
    host_marker.write_text("host")
    try:
        r = lab.exec_in(CT, f"readlink /proc/self/ns/pid; cat /proc/1/comm; ps -o ppid= -p $$; pwd; echo $PATH; "
                            f"ls {host_marker} 2>/dev/null || echo no-marker; echo ct > /tmp/ct-only; hostname; "
                            "echo $$; ps -eo pid= | wc -l")
        ns, init, ppid, cwd, path, marker, hostname, pid, nprocs = r.stdout.split("\n")[:9]
        assert r.returncode == 0, r.stderr
        assert ns != os.readlink("/proc/self/ns/pid")  # a PID namespace of its own
        host_procs = sum(1 for d in os.listdir("/proc") if d.isdigit())
        # only the container's processes are visible (its init, sessions, probes), never the host's
        assert int(pid) != os.getpid() and int(nprocs) < min(20, host_procs // 2), (nprocs, host_procs)
        assert init == "init" and ppid.strip() == "0"  # an attached command has PPID 0 in there
        assert (cwd, path, marker, hostname) == ("/", "/sbin:/bin:/usr/sbin:/usr/bin", "no-marker", "ct200")
        assert not Path("/tmp/ct-only").exists()
        host_pid1 = Path(f"/proc/{lab.container_init_pid(CT)}/comm").read_text().strip()
        assert host_pid1 == "init"
    finally:
        host_marker.unlink()


def test_pct_exec_env_is_minimal(lab: Lab) -> None:
    r = lab.exec_in(CT, ["/usr/bin/env"])
    env = dict(line.split("=", 1) for line in r.stdout.splitlines())
    assert env["PATH"] == "/sbin:/bin:/usr/sbin:/usr/bin" and env["HOME"] == "/root"
    assert "COCKPIT_LAB" not in env
    assert lab.exec_in(CT, "command -v pct").returncode != 0


def test_pct_exec_exit_codes_are_preserved(lab: Lab) -> None:
    assert lab.exec_in(CT, "exit 7").returncode == 7
    r = lab.ssh("pct exec 200 -- sh -c 'exit 7'")
    assert r.returncode == 7
    r = lab.exec_in(CT, ["no-such-command"])
    assert r.returncode == 127
    assert "nsenter: failed to execute no-such-command: No such file or directory" in r.stderr
    not_exec = lab.workspace(CT) / "not-executable"
    not_exec.write_text("echo hi\n")
    not_exec.chmod(0o644)
    assert lab.exec_in(CT, [str(not_exec)]).returncode == 126


def test_pct_exec_long_lived_shell_on_stdin(lab: Lab) -> None:
    r = lab.pct("exec", CT, "--", "/bin/sh", input="echo one\necho two >&2\nexit 3\n")
    assert (r.returncode, r.stdout, r.stderr) == (3, "one\n", "two\n")


def test_missing_container_real_text(lab: Lab) -> None:
    for args in (("exec", 999, "--", "true"), ("status", 999), ("start", 999), ("push", 999, "/a", "/b")):
        r = lab.pct(*args)
        assert (r.returncode, r.stderr) == (255, "Configuration file 'nodes/pve/lxc/999.conf' does not exist\n"), args
    r = lab.ssh("pct exec 999 -- true")
    assert r.returncode == 255 and "nodes/pve/lxc/999.conf" in r.stderr


def test_stopped_container_lifecycle_texts(lab: Lab) -> None:
    ctid = lab.add_container(202, start=False)
    try:
        assert lab.pct("status", ctid).stdout == "status: stopped\n"
        for args in (("exec", ctid, "--", "true"), ("push", ctid, "/etc/hostname", "/tmp/x"),
                     ("pull", ctid, "/etc/hostname", "/tmp/x")):
            r = lab.pct(*args)
            assert (r.returncode, r.stderr) == (255, "container '202' not running!\n"), args
        assert lab.pct("stop", ctid).stderr == "CT 202 not running\n"
        assert lab.pct("start", ctid).returncode == 0
        assert lab.pct("status", ctid).stdout == "status: running\n"
        r = lab.pct("start", ctid)
        assert (r.returncode, r.stderr) == (255, "CT 202 already running\n")
        init = lab.container_init_pid(ctid)
        assert lab.pct("stop", ctid).returncode == 0
        assert not pid_alive(init) and lab.pct("status", ctid).stdout == "status: stopped\n"
        lab.set_container_option(ctid, start_error="startup for container '202' failed")
        assert lab.pct("start", ctid).stderr == "startup for container '202' failed\n"
    finally:
        lab.remove_container(ctid)


def test_pct_usage_errors(lab: Lab) -> None:
    r = lab.pct("exec")
    assert (r.returncode, r.stderr) == (255, "400 not enough arguments\npct exec <vmid> [<extra-args>] [OPTIONS]\n")
    assert lab.pct("exec", "abc", "--", "true").returncode == 255
    assert lab.pct("frobnicate").returncode == 255
    assert "missing command" in lab.pct("exec", CT).stderr


def test_pct_list_and_config(lab: Lab, noreap: int) -> None:
    lines = lab.pct("list").stdout.splitlines()
    assert lines[0].rstrip() == "VMID       Status     Lock         Name"
    assert re.match(r"^200\s+running\s+ct200\s*$", lines[1]) and re.match(r"^201\s+running\s+ct201", lines[2])
    conf = lab.pct("config", CT).stdout
    assert "hostname: ct200\n" in conf and "arch: amd64\n" in conf


def test_non_reaping_init_keeps_the_orphan_zombie_until_reboot(lab: Lab, noreap: int) -> None:
    assert lab.exec_in(noreap, "cat /proc/1/comm").stdout == "sleepy-init\n"
    # the seed's launch: setsid + the launching shell exits -> the job is reparented to PID 1
    r = lab.exec_in(noreap, "setsid sleep 0.1 </dev/null >/dev/null 2>&1 &")
    assert r.returncode == 0
    zombie = wait_for(lambda: [p for p in ps(lab, noreap) if p["stat"].startswith("Z")], 5,
                      message=lambda: str(ps(lab, noreap)))
    assert zombie[0]["ppid"] == "1" and zombie[0]["comm"] == "sleep"
    assert lab.exec_in(noreap, f"kill -9 {zombie[0]['pid']}").returncode == 0  # a zombie cannot be killed
    assert any(p["stat"].startswith("Z") for p in ps(lab, noreap))
    old_init = lab.container_init_pid(noreap)
    assert lab.pct("reboot", noreap).returncode == 0
    assert lab.container_init_pid(noreap) not in (None, old_init)
    assert not any(p["stat"].startswith("Z") for p in ps(lab, noreap))


def test_reaping_init_reaps_orphans(lab: Lab) -> None:
    r = lab.exec_in(CT, "setsid sh -c 'sleep 0.05; touch /tmp/orphan-done' </dev/null >/dev/null 2>&1 &")
    assert r.returncode == 0

    def reaped() -> bool:
        out = lab.exec_in(CT, "test -e /tmp/orphan-done && ps -eo stat= | grep -c '^Z'").stdout.strip()
        return out == "0"

    wait_for(reaped, 5, message=lambda: str(ps(lab, CT)))


def test_push_pull_and_reboot_clears_tmp(lab: Lab, noreap: int) -> None:
    src = lab.dir / "push-src.txt"
    src.write_text("payload\n")
    assert lab.pct("push", noreap, src, "/tmp/pushed.txt", "--perms", "0600").returncode == 0
    assert lab.exec_in(noreap, "stat -c %a /tmp/pushed.txt").stdout == "600\n"
    assert not Path("/tmp/pushed.txt").exists()  # it went into the container's own /tmp
    back = lab.dir / "pulled.txt"
    assert lab.pct("pull", noreap, "/tmp/pushed.txt", back).returncode == 0
    assert back.read_text() == "payload\n"
    r = lab.pct("pull", noreap, "/tmp/nope", back)
    assert (r.returncode, r.stderr) == (255, "failed to open /tmp/nope for reading\n")
    assert lab.pct("reboot", noreap).returncode == 0
    assert lab.exec_in(noreap, "ls -A /tmp").stdout == ""


def test_jobsim_zl_main_thread_exit_shows_Zl(lab: Lab) -> None:
    log = lab.workspace(CT) / "zl.log"
    r = lab.exec_in(CT, ["setsid", "-f", *lab.jobsim_argv("--crash", "zl", "--crash-at", "1", "--log", log)])
    assert r.returncode == 0
    row = wait_for(lambda: [p for p in ps(lab, CT) if p["stat"].startswith("Z") and "l" in p["stat"]], 5,
                   message=lambda: str(ps(lab, CT)))[0]
    assert row["comm"] == "python3"
    lab.exec_in(CT, f"kill -9 {row['pid']}")
    wait_for(lambda: not any(p["pid"] == row["pid"] for p in ps(lab, CT)), 5)


def test_close_kills_sshd_and_containers_and_owner_crash_leaks_nothing() -> None:
    if lab_unavailable_reason():
        pytest.skip(lab_unavailable_reason())
    with Lab() as other:
        other.add_container(300)
        init, sshd, d = other.container_init_pid(300), other.sshd_pid, other.dir
        assert init and sshd
    assert not pid_alive(init) and not pid_alive(sshd) and not d.exists()
    # the owner is SIGKILLed: no atexit, yet the inits (owner lock) and sshd (pdeathsig) go away
    code = ("import json,sys,time; from tests.lab import Lab; lab=Lab(keep=True).start(); lab.add_container(300);"
            "print(json.dumps([lab.container_init_pid(300), lab.sshd_pid, str(lab.dir)]), flush=True);"
            "time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).parent.parent)
    leftover = None
    try:
        init, sshd, leftover = json.loads(proc.stdout.readline())
        proc.kill()
        proc.wait(10)
        wait_for(lambda: not pid_alive(init) and not pid_alive(sshd), 10)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        if leftover:
            shutil.rmtree(leftover, ignore_errors=True)


# -------------------------------------------------------------------------------------- nvidia-smi

QUERY = "index,name,uuid,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,power.limit"


def smi(lab: Lab, *args: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(lab.nvidia_smi), *args], capture_output=True, text=True, timeout=timeout)


def test_nvidia_smi_query_formats(fresh_lab: Lab) -> None:
    lab = fresh_lab
    uuid0 = "GPU-11111111-2222-3333-4444-555555555555"
    lab.set_gpu_state(gpus=[lab.gpu(0, uuid=uuid0, **{"utilization.gpu": 97, "memory.used": 71234,
                                                      "temperature.gpu": 64, "power.draw": 612.3}),
                            lab.gpu(1, **{"power.draw": "[N/A]", "utilization.gpu": "[Not Supported]",
                                          "memory.used": "[Insufficient Permissions]"})])
    r = smi(lab, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits")
    assert r.returncode == 0
    row0, row1 = r.stdout.splitlines()
    assert row0 == f"0, NVIDIA H100 80GB HBM3, {uuid0}, 97, 71234, 81559, 64, 612.30, 700.00"
    assert row1.split(", ")[3:6] == ["[Not Supported]", "[Insufficient Permissions]", "81559"]
    assert row1.split(", ")[7] == "[N/A]"
    r = smi(lab, "--query-gpu=memory.used,utilization.gpu,power.draw,temperature.gpu,name", "--format=csv", "-i", "0")
    assert r.stdout == ("memory.used [MiB], utilization.gpu [%], power.draw [W], temperature.gpu, name\n"
                        "71234 MiB, 97 %, 612.30 W, 64, NVIDIA H100 80GB HBM3\n")
    r = smi(lab, "--query-gpu=memory.used", "--format=csv,nounits", "-i", "0")
    assert r.stdout == "memory.used [MiB]\n71234\n"
    r = smi(lab, "--query-gpu=index,foo", "--format=csv")
    assert (r.returncode, r.stdout) == (2, 'Field "foo" is not a valid field to query.\n\n')
    assert smi(lab, "-L").stdout.splitlines()[0] == f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {uuid0})"
    screen = smi(lab).stdout.splitlines()
    assert {len(x) for x in screen[1:]} == {91} and "| NVIDIA-SMI 550.54.15" in screen[2]
    assert sum("NVIDIA H100 80GB HBM3" in x for x in screen) == 2


def test_nvidia_smi_compute_apps(fresh_lab: Lab) -> None:
    lab = fresh_lab
    q = "--query-compute-apps=pid,process_name,used_memory,gpu_uuid"
    assert smi(lab, q, "--format=csv,noheader,nounits").stdout == ""
    uuid = lab.gpu(0)["uuid"]
    lab.set_gpu_state(gpus=[lab.gpu(0)], apps=[{"pid": 91451, "process_name": "/usr/bin/python3",
                                                "used_memory": 78120, "gpu_uuid": uuid}])
    assert smi(lab, q, "--format=csv,noheader,nounits").stdout == f"91451, /usr/bin/python3, 78120, {uuid}\n"
    assert smi(lab, q, "--format=csv").stdout == ("pid, process_name, used_gpu_memory [MiB], gpu_uuid\n"
                                                  f"91451, /usr/bin/python3, 78120 MiB, {uuid}\n")


@pytest.mark.parametrize("mode,code,first", [
    ("driver-failure", 9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."),
    ("nvml-missing", 12, "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system."),
    ("fallen-off-bus", 15, "Unable to determine the device handle for GPU0000:01:00.0: Unknown Error"),
    ("gpu-lost", 15, "Unable to determine the device handle for GPU 0000:01:00.0: GPU is lost."),
    ("version-mismatch", 18, "Failed to initialize NVML: Driver/library version mismatch"),
])
def test_nvidia_smi_failure_modes(fresh_lab: Lab, mode: str, code: int, first: str) -> None:
    fresh_lab.set_gpu_state(mode)
    r = smi(fresh_lab, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits")
    assert r.returncode == code and r.stdout.startswith(first), r.stdout
    if mode == "version-mismatch":
        assert r.stdout.splitlines()[1] == "NVML library version: 550.54"


def test_nvidia_smi_hang_really_hangs_and_works_in_the_container(fresh_lab: Lab) -> None:
    lab = fresh_lab
    # the emulator finds its state relative to itself, so it also works inside a container
    r = lab.exec_in(CT, [str(lab.nvidia_smi), "--query-gpu=index,name", "--format=csv,noheader"])
    assert r.stdout == "0, NVIDIA H100 80GB HBM3\n"
    lab.set_gpu_state("hang")
    t0 = time.monotonic()
    r = lab.exec_in(CT, ["timeout", "1", str(lab.nvidia_smi), "-L"])
    assert r.returncode == 124 and time.monotonic() - t0 >= 0.9


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=st.lists(st.sampled_from(QUERY.split(",")), min_size=1, max_size=9, unique=True),
       header=st.booleans(), units=st.booleans())
def test_nvidia_smi_any_field_subset(lab: Lab, fields: list[str], header: bool, units: bool) -> None:
    lab.reset_gpu_state()
    fmt = ",".join(["csv"] + ([] if header else ["noheader"]) + ([] if units else ["nounits"]))
    r = smi(lab, "--query-gpu=" + ",".join(fields), "--format=" + fmt)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 1 + header
    if header:
        assert [h.split(" [")[0] for h in lines[0].split(", ")] == fields
    values = lines[-1].split(", ")
    assert len(values) == len(fields)
    for f, v in zip(fields, values, strict=True):
        if f == "memory.used":
            assert v == ("1 MiB" if units else "1")


# ------------------------------------------------------------------------------------------ jobsim


def jobsim(*args: object, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/usr/bin/python3", str(JOBSIM), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def test_jobsim_steps() -> None:
    r = jobsim("--steps", 3, "--interval", 0)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 4
    assert all(re.fullmatch(r"step \d+ loss \d+\.\d{4} lr 3e-4", x) for x in lines[:3])
    assert lines[0].startswith("step 1 loss ")


CRASHES = [
    ("oom", 1, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
               "capacity of 79.15 GiB of which 1.02 GiB is free"),
    ("import", 1, "ModuleNotFoundError: No module named 'flash_attn'"),
    ("syntax", 1, "SyntaxError: expected ':'"),
    ("illegal", 1, "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."),
    ("nccl", -signal.SIGABRT, "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog"),
    ("segfault", -signal.SIGSEGV, "Extension modules: numpy.core._multiarray_umath"),
    ("sigkill", -signal.SIGKILL, None),
    ("silent", 0, None),
]


@pytest.mark.parametrize("kind,code,last", CRASHES, ids=[c[0] for c in CRASHES])
def test_jobsim_crash_kinds(kind: str, code: int, last: str | None) -> None:
    r = jobsim("--steps", 5, "--interval", 0, "--crash", kind, "--crash-at", 2)
    assert r.returncode == code, r.stderr
    if last is None:
        assert r.stderr == ""
    else:
        assert r.stderr.rstrip("\n").splitlines()[-1].startswith(last)
    steps = r.stdout.splitlines()
    if kind in ("import", "syntax"):
        assert steps == []  # dies at import time, before the first step
    else:
        assert len(steps) == 1 and steps[0].startswith("step 1 loss ")
    if kind == "illegal":
        assert "RuntimeError: CUDA error: an illegal memory access was encountered" in r.stderr
    if kind == "segfault":
        assert r.stderr.startswith("Fatal Python error: Segmentation fault\n\nCurrent thread 0x")


def test_jobsim_fx_race_from_drafter_threads() -> None:
    r = jobsim("--steps", 10, "--interval", 0.01, "--crash", "fx", "--crash-at", 3, "--threads", 3)
    assert r.returncode == 1
    err = r.stderr.splitlines()
    assert sorted(x for x in err if x.startswith("Exception in thread")) == [
        f"Exception in thread drafter-{i}:" for i in range(3)]
    assert err[-1] == ("RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized "
                       "function. This is not supported at the moment.")
    assert '  File "/usr/local/lib/python3.11/dist-packages/torch/_dynamo/eval_frame.py", line 554, in _fn' in err
    frames = [x for x in err if x.startswith("  File ")]
    assert all(re.fullmatch(r'  File "[^"]+", line \d+, in \S+', x) for x in frames)
    steps = [x.split()[1] for x in r.stdout.splitlines() if x.startswith("step ")]
    assert steps == ["1", "2"]
    assert sorted(x for x in r.stdout.splitlines() if x.startswith("drafter-")) == [
        f"drafter-{i}: compiling flex_attention" for i in range(3)]


def test_jobsim_fixed_file_prevents_the_crash(tmp_path: Path) -> None:
    fixed = tmp_path / "fix"
    fixed.write_text("fixed\n")
    r = jobsim("--steps", 3, "--interval", 0, "--crash", "fx", "--threads", 2, "--fixed-file", fixed)
    assert r.returncode == 0 and "Exception" not in r.stderr


def test_jobsim_log_delay_and_start_delay(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    proc = subprocess.Popen(["/usr/bin/python3", str(JOBSIM), "--steps", "2", "--interval", "0", "--log", str(log),
                             "--log-delay", "0.3", "--start-delay", "0.2"])
    t0 = time.monotonic()
    try:
        assert not log.exists()
        wait_for(log.exists, 5)
        created = time.monotonic() - t0
        assert log.read_text() == ""  # created, but the model is still "loading"
        wait_for(lambda: "training finished" in log.read_text(), 5)
        assert proc.wait(5) == 0
        assert created >= 0.25
        assert log.read_text().splitlines()[0].startswith("step 1 loss")
    finally:
        proc.kill()
        proc.wait()


def test_jobsim_runs_inside_the_container_with_minimal_path(lab: Lab) -> None:
    r = lab.exec_in(CT, lab.jobsim_argv("--steps", 2, "--interval", 0, "--crash", "oom", "--crash-at", 2))
    assert r.returncode == 1 and r.stdout.startswith("step 1 loss")
    assert "torch.OutOfMemoryError" in r.stderr.splitlines()[-1]


# ------------------------------------------------------------------------------------------ config


ALLOWED = {
    "target": {"name", "host", "user", "port", "runtime", "container"},
    "ssh": {"known_hosts", "identity_file", "config_file", "keepalive_interval", "connect_timeout"},
    "job": {"workdir", "command", "log", "launcher", "startup_timeout", "progress_pattern", "healthy_after", "env"},
    "deploy": {"source", "dest", "exclude"},
    "cache": {"paths"},
    "gpu": {"nvidia_smi", "where"},
    "ui": {"theme", "refresh_interval"},
    "verify": {"settle", "fate_interval"},
}


def test_config_toml_for_the_lab(lab: Lab, tmp_path: Path) -> None:
    text = lab.config_toml(job={"env": {"PYTHONUNBUFFERED": "1"}, "launcher": "setsid"}, ui=None)
    doc = tomllib.loads(text)
    assert set(doc) <= set(ALLOWED)
    for section, table in doc.items():
        assert set(table) <= ALLOWED[section], section
    assert doc["target"] == {"name": "lab", "host": "127.0.0.1", "user": "root", "port": lab.port,
                             "runtime": "pct", "container": 200}
    assert doc["ssh"]["known_hosts"] == str(lab.known_hosts)
    assert doc["ssh"]["config_file"] == str(lab.ssh_config)  # never the developer's ~/.ssh/config
    assert doc["job"]["env"] == {"PYTHONUNBUFFERED": "1"} and "{attempt}" in doc["job"]["log"]
    assert doc["gpu"]["nvidia_smi"] == str(lab.nvidia_smi) and "ui" not in doc
    path = lab.write_config(tmp_path / "cockpit.toml", target={"container": 201})
    assert tomllib.loads(path.read_text())["target"]["container"] == 201
    try:
        from cockpit.core.config import parse_config
    except ImportError:
        return
    cfg = parse_config(text, path=path)
    assert cfg.target.port == lab.port and cfg.target.container == 200
