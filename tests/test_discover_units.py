"""Discovery without a lab: the parser on captured script output (malformed lines included), the
``{attempt}`` insertion, the config text (loaded by the real loader), the ranking, the choice, and
the scan script run for real on this machine against a real process."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cockpit.cli.discover import choose
from cockpit.core.config import ConfigError, parse_config
from cockpit.core.discover import (
    DiscoverySpec,
    FileExists,
    attempt_log_path,
    config_text,
    gpu_lines,
    parse_report,
    rank,
    write_config,
)
from cockpit.core.discover.script import MARKER, SCAN, build_script
from tests.lab.util import wait_for

T, U = "\t", "\x1f"


def _job(pid: int, ppid: int, *, argv: list[str], cwd: str = "/w", fd1: str = "/w/train.log", torch: str = "1",
         match: str = "1", env: str = "CUDA_VISIBLE_DEVICES=0,1" + U, logs: str = "", cwd_log: str = "") -> str:
    return T.join(["J", str(pid), str(ppid), "S", "1700000000", "alice", torch, match, cwd, fd1, fd1, logs, cwd_log, env,
                   U.join(argv) + U])


CAPTURED = "\n".join([
    "@@ host",
    "K\ttool\tpct",
    "K\ttool\tdocker",
    "K\ttool\tsbatch",
    "this line is noise",
    "@@ target none -",
    "K\tuser\troot",
    "Z\t77\t1\tdefunct-thing",
    "@@ pct-list",
    "VMID       Status     Lock         Name",
    "200        running                 trainer",
    "201        stopped                 old",
    "202        running                 gpu-box",
    "@@ rc 0",
    "@@ pct-conf 200",
    "arch: amd64",
    "@@ pct-conf 202",
    "lxc.cgroup2.devices.allow: c 195:* rwm",
    "dev0: /dev/nvidia0",
    "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file",
    "lxc.cgroup2.devices.allow: c 10:200 rwm",
    "@@ target pct 200",
    "K\tuser\troot",
    _job(4242, 1, argv=["python3", "train.py", "--lr", "3e-4"]),
    _job(4250, 4242, argv=["python3", "-c", "worker"], match="0"),
    "J\t12\tnot-a-number",
    "J\tx\t1\tS\t1\tu\t1\t1\t/\t/a\t/a\t\t\t\tpython3" + U,
    "Z\t99\t4242\tpython3",
    "E\tprocess\t1 job processes could not be read (cwd, fds): not root?",
    "@@ rc 0",
    "@@ target pct 202",
    _job(7, 1, argv=["python3", "run.py"], fd1="pipe:[123]", torch="?", env="?", match="1", cwd="/srv"),
    "@@ rc 0",
    "@@ engine-ps docker",
    "abc123|web|nginx:1|Up 2 hours",
    "def456|olddb|<no value>|Exited (0) 3 days ago",
    "@@ rc 0",
    "@@ squeue",
    "squeue: error: something",
    "squeue: fatal: Could not establish a configuration source",
    "@@ rc 1",
    "@@ mystery section",
])


def test_parser_reads_every_section_and_keeps_malformed_lines() -> None:
    r = parse_report(CAPTURED, "gpu1", user="root", port=2222)
    assert r.tools == ["pct", "docker", "sbatch"]
    assert [(t.runtime, t.container, t.running) for t in r.targets] == [
        ("none", None, True), ("pct", "200", True), ("pct", "201", False), ("pct", "202", True),
        ("docker", "web", True), ("docker", "olddb", False)]
    host, ct200, ct201, ct202, web, old = r.targets
    assert host.zombies[0].comm == "defunct-thing"
    assert ct200.name == "trainer" and ct200.gpu_lines == [] and ct202.gpu_lines == [
        "lxc.cgroup2.devices.allow: c 195:* rwm", "dev0: /dev/nvidia0",
        "lxc.mount.entry: /dev/nvidia0 dev/nvidia0 none bind,optional,create=file"]
    (job,) = ct200.jobs  # the worker is folded into its parent
    assert job.argv == ["python3", "train.py", "--lr", "3e-4"] and job.workers == [4250]
    assert job.torch is True and job.env == {"CUDA_VISIBLE_DEVICES": "0,1"} and job.user == "alice"
    assert job.output == "file" and job.log_path == "/w/train.log" and job.log_source == "/proc/4242/fd/1"
    assert [z.pid for z in ct200.zombies] == [99]
    assert any("could not be read" in p for p in ct200.problems)
    (pj,) = ct202.jobs
    assert pj.output == "pipe" and pj.log_path is None and pj.torch is None and pj.env is None
    assert not ct201.scanned and web.image == "nginx:1" and old.image == ""
    assert "J\t12\tnot-a-number" in r.malformed and any(m.startswith("J\tx\t") for m in r.malformed)
    assert "this line is noise" in r.malformed and "@@ mystery section" in r.malformed
    assert r.problems == ["host: squeue: squeue: fatal: Could not establish a configuration source", "host: squeue: exited with 1"]


def test_parser_survives_truncated_and_empty_output() -> None:
    for cut in range(0, len(CAPTURED), 97):
        parse_report(CAPTURED[:cut], "h")  # never raises
    assert parse_report("", "h").targets == []


def test_ranking_puts_a_running_torch_job_writing_a_file_first() -> None:
    r = parse_report(CAPTURED, "gpu1")
    cands = rank(r)
    assert (cands[0].target.container, cands[0].job.pid if cands[0].job else None) == ("200", 4242)
    assert cands[1].target.container == "202"  # a job, but to a pipe and without libtorch
    assert [c.target.running for c in cands][-2:] == [False, False]
    assert "libtorch mapped" in cands[0].describe() and "output: pipe" in cands[1].describe()


@pytest.mark.parametrize("path,want", [
    ("/w/train.log", "/w/train-{attempt}.log"),
    ("/w/out", "/w/out-{attempt}"),
    ("/w/run.2024.txt", "/w/run.2024-{attempt}.txt"),
    ("/w/.log", "/w/.log-{attempt}"),
    ("/w/train-{attempt}.log", "/w/train-{attempt}.log"),
    ("/a.b/train", "/a.b/train-{attempt}"),
])
def test_attempt_inserted_next_to_the_name(path: str, want: str) -> None:
    assert attempt_log_path(path) == want


def test_config_text_has_sources_and_loads() -> None:
    r = parse_report(CAPTURED, "gpu1")
    c = rank(r)[0]
    spec = DiscoverySpec.parse("root@gpu1:200", port=2222, identity_file="/k/id", known_hosts="/k/kh")
    text = config_text(spec, c.target, c.job, command_line="cockpit init root@gpu1:200")
    cfg = parse_config(text)
    assert (cfg.target.host, cfg.target.user, cfg.target.port, cfg.target.runtime, cfg.target.container) == ("gpu1", "root", 2222, "pct", 200)
    assert cfg.ssh.identity_file == ["/k/id"] and cfg.ssh.known_hosts == "/k/kh"
    assert cfg.job.workdir == "/w" and cfg.job.command == "python3 train.py --lr 3e-4"
    assert cfg.job.log == "/w/train-{attempt}.log" and cfg.job.env == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert cfg.cache.paths == ["/tmp/torchinductor_alice"]
    assert "# from /proc/4242/cwd" in text and "# from /proc/4242/fd/1: /w/train.log" in text
    assert "TORCHINDUCTOR_CACHE_DIR not set" in text


def test_config_text_for_a_pipe_job_and_for_no_job() -> None:
    r = parse_report(CAPTURED, "gpu1")
    ct202 = r.target("pct", "202")
    assert ct202 is not None
    text = config_text(DiscoverySpec("gpu1"), ct202, ct202.jobs[0])
    cfg = parse_config(text)
    assert cfg.job.log == "/srv/train-{attempt}.log" and "the next launch will write here" in text
    assert "environ unreadable" in text and "# GPU passthrough in its config: dev0: /dev/nvidia0" in text
    web = r.target("docker", "web")
    assert web is not None
    cfg = parse_config(config_text(DiscoverySpec("gpu1"), web, None))
    assert (cfg.target.runtime, cfg.target.container, cfg.job.command) == ("docker", "web", "")


def test_inductor_cache_from_the_environment_and_a_refused_one() -> None:
    r = parse_report(CAPTURED.replace("CUDA_VISIBLE_DEVICES=0,1" + U, "TORCHINDUCTOR_CACHE_DIR=/scratch/ind" + U, 1), "h")
    c = rank(r)[0]
    text = config_text(DiscoverySpec("h"), c.target, c.job)
    assert parse_config(text).cache.paths == ["/scratch/ind"] and "from TORCHINDUCTOR_CACHE_DIR in /proc/4242/environ" in text
    r = parse_report(CAPTURED.replace("CUDA_VISIBLE_DEVICES=0,1" + U, "TORCHINDUCTOR_CACHE_DIR=/usr" + U, 1), "h")
    c = rank(r)[0]
    with pytest.raises(ConfigError):  # the real loader's rule: never a system directory
        config_text(DiscoverySpec("h"), c.target, c.job)


def test_write_never_overwrites_without_force(tmp_path: Path) -> None:
    r = parse_report(CAPTURED, "gpu1")
    c = rank(r)[0]
    text = config_text(DiscoverySpec("gpu1"), c.target, c.job)
    p = tmp_path / "c.toml"
    p.write_text("mine\n")
    with pytest.raises(FileExists, match="--force"):
        write_config(p, text)
    assert p.read_text() == "mine\n"
    write_config(p, text, force=True)
    assert p.read_text() == text
    with pytest.raises(ConfigError):
        write_config(tmp_path / "bad.toml", text.replace("[job]", "[jobb]"))
    assert not (tmp_path / "bad.toml").exists()


@pytest.mark.parametrize("spec,want", [
    ("gpu1", (None, "gpu1", None)), ("root@gpu1", ("root", "gpu1", None)), ("root@gpu1:200", ("root", "gpu1", "200")),
    ("u@[::1]:trainer", ("u", "::1", "trainer")), ("a@b@h:c", ("a@b", "h", "c")),
])
def test_spec_parse(spec: str, want: tuple[str | None, str, str | None]) -> None:
    s = DiscoverySpec.parse(spec)
    assert (s.user, s.host, s.container) == want


def test_spec_without_host_is_refused() -> None:
    with pytest.raises(ValueError, match="no host"):
        DiscoverySpec.parse("root@:200")


def test_choose_asks_for_a_number() -> None:
    cands = rank(parse_report(CAPTURED, "h"))
    answers = iter(["x", "9", "2"])
    assert choose(cands, yes=False, interactive=True, ask=lambda _p: next(answers)) is cands[1]
    assert choose(cands, yes=False, interactive=True, ask=lambda _p: "") is cands[0]
    assert choose(cands, yes=True, interactive=False) is cands[0]
    assert choose(cands, yes=False, interactive=False) is None


def test_user_values_are_quoted_into_the_script() -> None:
    evil = "200'; touch /tmp/pwned-by-discover; echo '"
    script = build_script(evil)
    assert f"ONLY={shlex.quote(evil)}" in script
    r = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_scan_finds_a_real_process_here(tmp_path: Path) -> None:
    """The scan for real, on this machine: a Python process whose argv names training, writing to a
    file through shell redirection, with environment keys; and a zombie of our own."""
    log = tmp_path / "train.log"
    train = tmp_path / "train.py"
    train.write_text("import sys, time\nprint('step 1', flush=True)\ntime.sleep(60)\n")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "3", "WORLD_SIZE": "1"}
    proc = subprocess.Popen(f"exec {shlex.quote(sys.executable)} train.py > train.log 2>&1", shell=True, cwd=tmp_path, env=env)
    zombie = subprocess.Popen(["true"])  # exits, never waited for until the end: a zombie of this process
    try:
        wait_for(lambda: "step 1" in (log.read_text() if log.exists() else "") and _is_zombie(zombie.pid), 20,
                 message="the job did not start")
        out = subprocess.run(["sh", "-c", SCAN, MARKER], capture_output=True, text=True, timeout=60).stdout
        r = parse_report("@@ target none -\n" + out, "localhost")
        (host,) = r.targets
        job = next(j for j in host.jobs if j.pid == proc.pid)
        assert job.argv == [sys.executable, "train.py"] and job.cwd == str(tmp_path)
        assert job.output == "file" and job.log_path == str(log) and job.argv_match
        assert job.env == {"CUDA_VISIBLE_DEVICES": "3", "WORLD_SIZE": "1"}
        assert job.start is not None and abs(job.start - time.time()) < 120
        assert zombie.pid in [z.pid for z in host.zombies]
    finally:
        proc.kill()
        proc.wait()
        zombie.wait()


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_gpu_lines_of_a_proxmox_config() -> None:
    conf = ("arch: amd64\nlxc.cgroup2.devices.allow: c 195:* rwm\nlxc.cgroup2.devices.allow: c 226:0 rwm\n"
            "dev0: /dev/nvidia0,gid=44\nlxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file\n"
            "mp0: /data,mp=/data\n")
    assert gpu_lines(conf) == ["lxc.cgroup2.devices.allow: c 195:* rwm", "dev0: /dev/nvidia0,gid=44",
                               "lxc.mount.entry: /dev/nvidiactl dev/nvidiactl none bind,optional,create=file"]


@pytest.mark.skipif(not os.environ.get("COCKPIT_TORCH_PYTHON"), reason="set COCKPIT_TORCH_PYTHON to a Python that has torch")
def test_scan_sees_libtorch_mapped_in_a_real_torch_process(tmp_path: Path) -> None:
    """A process that imported torch and whose argv names nothing: found by /proc/PID/maps alone."""
    out = tmp_path / "plain.out"
    code = "import torch, time; print('ready', flush=True); time.sleep(120)"
    with open(out, "wb") as f:
        proc = subprocess.Popen([os.environ["COCKPIT_TORCH_PYTHON"], "-c", code], stdout=f, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "ready" in out.read_text(), 120, message="torch did not import")
        scan = subprocess.run(["sh", "-c", SCAN, MARKER], capture_output=True, text=True, timeout=60).stdout
        (host,) = parse_report("@@ target none -\n" + scan, "localhost").targets
        job = next(j for j in host.jobs if j.pid == proc.pid)
        assert job.torch is True and not job.argv_match and job.log_path == str(out)
    finally:
        proc.kill()
        proc.wait()
