"""``cockpit init`` against the lab: a real sshd, pct containers that are real namespaces, real
jobs started by hand.

The scene (built once for the module on the session lab): container 200 runs a jobsim started by
hand as ``python3 train.py`` (argv names training: torch is not installed here, so libtorch
cannot be mapped) with its output redirected to ``train.log`` by the shell and
``CUDA_VISIBLE_DEVICES`` / ``TORCHINDUCTOR_CACHE_DIR`` set; container 231 (PID 1 never reaps)
runs one whose output goes into a pipe, and holds a zombie; 232 is stopped; 233 has a GPU passed
through in its config.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cockpit.cli import main
from cockpit.core.config import load_config
from cockpit.core.discover import DiscoverySpec, HostReport, discover, parse_report
from cockpit.core.discover.script import build_script
from tests.lab import Lab
from tests.lab.gpu import add_gpu_container
from tests.lab.util import wait_for

PIPE_CT, STOPPED_CT, GPU_CT, DOCKER_CT = 231, 232, 233, 234
CACHE = "/tmp/inductor-discover"


def _zombies(lab: Lab, ctid: int) -> list[str]:
    r = lab.exec_in(ctid, "for f in /proc/[0-9]*/stat; do cat $f; done 2>/dev/null")
    return [ln for ln in r.stdout.splitlines() if ln.rsplit(")", 1)[-1].split()[:1] == ["Z"]]


@pytest.fixture(scope="module")
def scene(lab: Lab) -> Iterator[Lab]:
    added = [PIPE_CT, STOPPED_CT, GPU_CT, DOCKER_CT]
    lab.add_engine_container("docker", "trainer", DOCKER_CT)
    lab.add_container(PIPE_CT, reaping_init=False)
    lab.add_container(STOPPED_CT, start=False)
    add_gpu_container(lab, GPU_CT)
    ws, pws = lab.workspace(200), lab.workspace(PIPE_CT)
    for d, name in ((ws, "train.py"), (pws, "train_pipe.py")):
        with contextlib.suppress(FileNotFoundError):
            (d / name).unlink()
        (d / name).symlink_to(lab.jobsim)
    (ws / "train.log").unlink(missing_ok=True)
    lab.exec_in(200, f"cd {ws} && {{ CUDA_VISIBLE_DEVICES=0 TORCHINDUCTOR_CACHE_DIR={CACHE} setsid /usr/bin/python3 train.py "
                     "--steps 0 --interval 0.5 > train.log 2>&1 < /dev/null & echo $! > train.pid; }", check=True)
    lab.exec_in(PIPE_CT, f"cd {pws} && setsid sh -c '/usr/bin/python3 train_pipe.py --steps 0 --interval 0.5 2>&1 | cat >/dev/null' "
                         "</dev/null >/dev/null 2>&1 & setsid sleep 0.1 </dev/null >/dev/null 2>&1 &", check=True)
    wait_for(lambda: "step" in (ws / "train.log").read_text() if (ws / "train.log").exists() else False, 30, message="the job in 200")
    wait_for(lambda: _zombies(lab, PIPE_CT), 30, message=f"a zombie in {PIPE_CT}")
    try:
        yield lab
    finally:
        lab.exec_in(200, f"kill $(cat {ws}/train.pid)")
        for ct in added:
            lab.remove_container(ct)


def _spec(lab: Lab, where: str = "", *, known_hosts: str | Path | None = None) -> DiscoverySpec:
    return DiscoverySpec.parse(f"root@127.0.0.1{where}", port=lab.port, identity_file=str(lab.identity_file),
                               known_hosts=str(known_hosts or lab.known_hosts))


def _init(lab: Lab, *args: str, where: str = "", known_hosts: str | Path | None = None,
          capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    argv = ["init", f"root@127.0.0.1{where}", "--port", str(lab.port), "--identity", str(lab.identity_file),
            "--known-hosts", str(known_hosts or lab.known_hosts), *args]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_discovery_finds_each_target_job_and_zombie(scene: Lab) -> None:
    lab = scene
    report: HostReport = asyncio.run(discover(_spec(lab)))
    assert "pct" in report.tools and not report.malformed
    by = {(t.runtime, t.container): t for t in report.targets}
    ct200, pipe, stopped, gpu = (by[("pct", str(c))] for c in (200, PIPE_CT, STOPPED_CT, GPU_CT))
    assert ct200.running and pipe.running and gpu.running and not stopped.running and not stopped.scanned
    (job,) = [j for j in ct200.jobs if "train.py" in j.argv]
    ws = str(lab.workspace(200))
    assert job.argv[1:] == ["train.py", "--steps", "0", "--interval", "0.5"] and job.argv_match and job.torch is False
    assert job.cwd == ws and job.user == "root" and job.output == "file" and job.log_path == f"{ws}/train.log"
    assert job.env == {"CUDA_VISIBLE_DEVICES": "0", "TORCHINDUCTOR_CACHE_DIR": CACHE}
    assert job.start is not None and abs(job.start - time.time()) < 600
    (pjob,) = pipe.jobs
    assert pjob.output == "pipe" and pjob.stdout and pjob.stdout.startswith("pipe:[") and pjob.log_path is None
    assert [z.comm for z in pipe.zombies] == ["sleep"]
    assert any("c 195:*" in ln for ln in gpu.gpu_lines) and any("/dev/nvidia0" in ln for ln in gpu.gpu_lines)
    assert ct200.gpu_lines == [] and gpu.jobs == []
    docker = by[("docker", "trainer")]  # through `docker ps` and `docker exec -i trainer`
    assert docker.running and docker.scanned and docker.facts.get("hostname") == "trainer" and docker.jobs == []
    host = by[("none", None)]  # the host sees the containers' processes, but counts them apart
    assert not [j for j in host.jobs if j.cwd in (ws, str(lab.workspace(PIPE_CT)))]
    assert int(host.facts.get("other_namespaces", "0")) >= 2


def test_init_writes_a_config_that_reaches_the_same_target(scene: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = scene
    out_file = tmp_path / "found.toml"
    code, out, err = _init(lab, "--yes", "-o", str(out_file), where=":200", capsys=capsys)
    assert code == 0, err
    assert f"wrote {out_file}" in out
    ws = str(lab.workspace(200))
    cfg = load_config(out_file)
    assert (cfg.target.runtime, cfg.target.container, cfg.target.port) == ("pct", 200, lab.port)
    assert cfg.job.workdir == ws and cfg.job.log == f"{ws}/train-{{attempt}}.log"
    assert cfg.job.command == "/usr/bin/python3 train.py --steps 0 --interval 0.5"
    assert cfg.cache.paths == [CACHE] and cfg.job.env["CUDA_VISIBLE_DEVICES"] == "0"
    text = out_file.read_text()
    assert "/cwd" in text and "fd/1" in text and "pct list" in text
    cockpit = shutil.which("cockpit")
    assert cockpit, "the installed cockpit command"
    r = subprocess.run([cockpit, "status", "--quick", "--json", "--config", str(out_file)], capture_output=True, text=True, timeout=120)
    doc = json.loads(r.stdout)
    assert "127.0.0.1" in doc["transport"] and "200" in doc["transport"], doc["transport"]
    stages = {s["name"]: s["status"] for s in doc["verdict"]["stages"]}
    assert stages.get("target shell answers") == "ok", stages


def test_a_job_writing_to_a_pipe_gets_a_log_of_its_own(scene: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = scene
    out_file = tmp_path / "pipe.toml"
    code, _out, err = _init(lab, "--yes", "-o", str(out_file), where=f":{PIPE_CT}", capsys=capsys)
    assert code == 0, err
    assert "process:" in err and "pipe" in err and "next launch" in err
    cfg = load_config(out_file)
    assert cfg.job.log == f"{lab.workspace(PIPE_CT)}/train-{{attempt}}.log"
    assert "the next launch will write here" in out_file.read_text()


@pytest.mark.parametrize("exists", [True, False])
def test_an_untrusted_host_key_shows_its_fingerprint(scene: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str], exists: bool) -> None:
    lab = scene
    empty = tmp_path / "known_hosts"
    if exists:
        empty.write_text("")
    code, _out, err = _init(lab, "--yes", "-o", str(tmp_path / "x.toml"), known_hosts=empty, capsys=capsys)
    fp = subprocess.run(["ssh-keygen", "-lf", f"{lab.host_key}.pub"], capture_output=True, text=True, check=True).stdout.split()[1]
    assert code == 1 and "ssh:" in err and "not trusted" in err
    assert fp in err and f"ssh-keyscan -p {lab.port} 127.0.0.1 >> {empty}" in err
    assert (empty.read_text() == "") if exists else not empty.exists()
    assert not (tmp_path / "x.toml").exists()


def test_an_existing_file_is_not_overwritten(scene: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = scene
    mine = tmp_path / "cockpit.toml"
    mine.write_text("# my own config\n")
    code, _out, err = _init(lab, "--yes", "-o", str(mine), where=":200", capsys=capsys)
    assert code == 2 and "exists" in err and "--force" in err
    assert mine.read_text() == "# my own config\n"
    code, _out, err = _init(lab, "--yes", "--force", "-o", str(mine), where=":200", capsys=capsys)
    assert code == 0, err
    assert load_config(mine).target.container == 200


def test_clear_messages_for_each_layer(scene: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = scene
    code, _out, err = _init(lab, "--yes", where=":299", capsys=capsys)
    assert code == 1 and "container: no container '299'" in err
    code, _out, err = _init(lab, "--yes", "-o", str(tmp_path / "g.toml"), where=f":{GPU_CT}", capsys=capsys)
    assert code == 0 and "process: no Python training job" in err
    assert "GPU passthrough" in (tmp_path / "g.toml").read_text()
    code, _out, err = _init(lab, where=f":{STOPPED_CT}", capsys=capsys)
    assert code == 1 and "nothing running" in err
    code, _out, err = _init(lab, capsys=capsys)  # 200 and 231 both have a job; stdin is no terminal here
    assert code == 2 and "--yes" in err and "1." in err and "2." in err
    assert main(["init", "root@no-such-host.invalid", "--yes"]) == 1
    assert "ssh:" in capsys.readouterr().err


def test_json_report_and_timing(scene: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    lab = scene
    code, out, _err = _init(lab, "--json", capsys=capsys)
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["candidates"][0]["pid"] is not None
    assert {t["container"] for t in doc["report"]["targets"]} >= {"200", str(PIPE_CT), str(STOPPED_CT), str(GPU_CT)}
    times = []
    for _ in range(5):
        t0 = time.monotonic()
        asyncio.run(discover(_spec(lab)))
        times.append((time.monotonic() - t0) * 1000)
    median = statistics.median(times)
    print(f"\ndiscovery against the lab: median {median:.0f} ms of 5 ({', '.join(f'{t:.0f}' for t in times)})")
    assert median < 30_000


def test_without_a_temporary_directory_the_parts_run_one_by_one(scene: Lab) -> None:
    """``mktemp`` failing (a read-only /tmp): the same report, the containers scanned in turn."""
    script = build_script()
    slow = script.replace("D=$(mktemp -d 2>/dev/null) || D=''", "D=$(false) || D=''")
    assert slow != script
    reports = [parse_report(scene.ssh(["sh", "-c", s], timeout=120).stdout, "lab") for s in (script, slow)]
    seen = [sorted((t.runtime, t.container, t.status, tuple(j.pid for j in t.jobs), tuple(t.gpu_lines))
                   for t in r.targets if t.runtime != "none") for r in reports]
    assert seen[0] == seen[1] and any(jobs for _r, _c, _s, jobs, _g in seen[0])


def test_on_a_terminal_it_lists_the_candidates_and_asks(scene: Lab, tmp_path: Path) -> None:
    """A real terminal (a pty) on stdin: the numbered list with evidence, then the pick is written."""
    lab = scene
    out_file = tmp_path / "picked.toml"
    master, slave = pty.openpty()
    argv = [sys.executable, "-m", "cockpit", "init", "root@127.0.0.1", "--port", str(lab.port),
            "--identity", str(lab.identity_file), "--known-hosts", str(lab.known_hosts), "-o", str(out_file)]
    proc = subprocess.Popen(argv, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parent.parent)
    os.close(slave)
    listing: list[str] = []
    try:
        assert proc.stderr is not None
        while not all(any(f". pct {ct} " in ln for ln in listing) for ct in (200, PIPE_CT)):
            line = proc.stderr.readline()
            assert line, f"no listing: {listing}"
            listing.append(line)
        pick = next(ln.split(".")[0].strip() for ln in listing if f". pct {PIPE_CT} " in ln)
        os.write(master, pick.encode() + b"\n")
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(master)
    assert proc.returncode == 0, err
    shown = "".join(listing)
    assert "candidates, best first:" in shown and ". pct 200 (ct200): pid" in shown
    assert "argv names training" in shown and "output: pipe" in shown
    assert "which one?" in out and f"wrote {out_file}" in out
    assert load_config(out_file).target.container == PIPE_CT
