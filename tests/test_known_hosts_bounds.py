"""known_hosts and key files are regular files of bounded size, judged before asyncssh opens them.

``UserKnownHostsFile /dev/zero`` (or ``[ssh] known_hosts`` naming any non-regular file) was read
without end: 2.9 GB of memory in 11 s, then a hang; a FIFO blocked for ever.  Each case runs the
connection in a child process under a memory limit and a timeout, so the old behaviour fails the
test instead of taking the machine down: the child must answer fast, with a layered error naming
the file, and stay small.  The lab's real sshd must see no connection at all.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHILD = r"""
import asyncio, json, resource, sys, time
from cockpit.core.config import load_config
from cockpit.core.runtimes import transport_for
from cockpit.core.remote.base import RemoteError

async def main():
    t = transport_for(load_config(sys.argv[1]))
    t0 = time.monotonic()
    try:
        r = await t.run("echo reached", timeout=10)
        out = {"ok": r.text}
    except RemoteError as e:
        out = {"layer": e.layer.value, "message": e.message, "hint": e.hint}
    finally:
        await t.close()
    out["s"] = time.monotonic() - t0
    out["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))

asyncio.run(main())
"""

MEMORY_LIMIT = 1536 * 1024 * 1024  # the child's address space: /dev/zero read to the end would pass it


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def connect(config: Path) -> dict:
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-c", CHILD, str(config)], capture_output=True, text=True, timeout=25,
                           preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"connecting hung for {time.monotonic() - t0:.0f}s (a file read without end?)")
    assert r.returncode == 0 and r.stdout.strip(), r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["s"] < 5 and out["maxrss_mib"] < 400, out  # fast, and bounded memory
    return out


def sshd_connections(lab) -> int:
    return lab.sshd_log.read_text(errors="replace").count("Connection from")


def ssh_config(tmp_path: Path, *lines: str) -> Path:
    p = tmp_path / "ssh_config"
    p.write_text("Host *\n" + "".join(f"  {line}\n" for line in lines))
    return p


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    p = tmp_path / "known_hosts.fifo"
    os.mkfifo(p)
    return p


@pytest.fixture
def big(tmp_path: Path) -> Path:
    p = tmp_path / "known_hosts.big"
    with open(p, "wb") as f:
        f.truncate(20 * 1024 * 1024)  # 20 MiB (sparse: instant to make)
    return p


def _kh(request, name: str) -> str:
    return "/dev/zero" if name == "/dev/zero" else str(request.getfixturevalue(name))


@pytest.mark.parametrize("which, words", [("/dev/zero", "character device"), ("fifo", "a FIFO"), ("big", "larger than the 16 MiB")])
def test_ssh_known_hosts_not_a_bounded_regular_file_is_a_config_error(lab, lab_config, tmp_path, request, which, words):
    kh = _kh(request, which)
    lab_config(ssh={"known_hosts": kh})
    seen = sshd_connections(lab)
    out = connect(tmp_path / "cockpit.toml")
    assert out.get("layer") == "config", out
    assert "[ssh] known_hosts" in out["message"] and kh in out["message"] and words in out["message"], out
    assert "[ssh] known_hosts" in out["hint"] and "regular" in out["hint"], out
    assert sshd_connections(lab) == seen  # refused before any connection


@pytest.mark.parametrize("which, words", [("/dev/zero", "character device"), ("fifo", "a FIFO"), ("big", "larger than")])
def test_user_known_hosts_file_in_the_ssh_config_is_bounded_too(lab, lab_config, tmp_path, request, which, words):
    kh = _kh(request, which)
    conf = ssh_config(tmp_path, f"UserKnownHostsFile {kh}")
    lab_config(ssh={"known_hosts": None, "config_file": str(conf)})
    out = connect(tmp_path / "cockpit.toml")
    assert out.get("layer") == "ssh", out
    assert kh in out["message"] and words in out["message"] and "UserKnownHostsFile" in out["message"], out
    assert "UserKnownHostsFile" in out["hint"] and "[ssh] known_hosts" in out["hint"], out


def test_identity_files_are_bounded_regular_files(lab, lab_config, tmp_path, fifo):
    lab_config(ssh={"identity_file": "/dev/zero"})
    out = connect(tmp_path / "cockpit.toml")
    assert out.get("layer") == "config" and "SSH key file /dev/zero is a character device" in out["message"], out
    assert "[ssh] identity_file" in out["hint"], out
    conf = ssh_config(tmp_path, f"IdentityFile {fifo}", "IdentitiesOnly yes")
    lab_config(ssh={"identity_file": None, "config_file": str(conf)})
    out = connect(tmp_path / "cockpit.toml")
    assert out.get("layer") == "ssh" and f"SSH key file {fifo} is a FIFO" in out["message"], out
    assert "IdentityFile" in out["hint"], out


def test_a_regular_known_hosts_and_key_still_connect(lab, lab_config, tmp_path):
    lab_config()
    out = connect(tmp_path / "cockpit.toml")
    assert out.get("ok") == "reached\n", out
