"""The host lock's release script, run by a real ``sh`` against a real holder process: the target
is free when the script returns, not a moment later (the next action, of this cockpit or another,
would find it taken with no one's note on it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cockpit.core.target_lock import release_script
from tests.lab import wait_for

SHELLS = [s for s in ("dash", "bash", "busybox") if shutil.which(s)]


def holder(shell: str, token_file: Path, trap: str) -> subprocess.Popen[bytes]:
    """A stand-in for the lock's holder: named as the real one is (its token in its cmdline), ends
    a moment after its token file goes; ``trap`` can make it deaf to the release's ``kill``."""
    argv = [shell, "-c", f'{trap}while [ -e "$2" ]; do sleep 0.3; done', "cockpit-lock-holder", "conn", str(token_file), "who"]
    if shell == "busybox":
        argv.insert(1, "sh")
    return subprocess.Popen(argv)


def state(pid: int) -> str:
    """``Z`` for a zombie (its files, the lock among them, closed), ``gone``, or its live state."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2][0]
    except FileNotFoundError:
        return "gone"


def wait_running(proc: subprocess.Popen[bytes], token: str) -> None:
    wait_for(lambda: token in Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode(errors="replace"), 10, "the holder never started")


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("trap", ["", "trap '' TERM; "], ids=["killed", "deaf-to-kill"])
def test_the_release_returns_once_the_holder_is_gone(tmp_path, shell, trap):
    lock, token = tmp_path / "cockpit-pct-200.lock", "0123456789abcdef"
    token_file = Path(f"{lock}.hold.{token}")
    token_file.touch()
    proc = holder(shell, token_file, trap)
    try:
        wait_running(proc, token)
        out = subprocess.run(["sh", "-c", release_script(str(lock), token, proc.pid)], capture_output=True, timeout=30)
        assert out.returncode == 0 and out.stderr == b"", out
        assert state(proc.pid) in ("Z", "gone")  # a deaf holder ends by its own loop, its token gone
        assert not token_file.exists()
    finally:
        proc.kill()
        proc.wait()


def test_the_release_never_kills_a_process_that_is_not_the_holder(tmp_path):
    lock = tmp_path / "cockpit-pct-200.lock"
    other = subprocess.Popen(["sleep", "30"])  # a pid reused by something else: no token in its cmdline
    try:
        out = subprocess.run(["sh", "-c", release_script(str(lock), "0123456789abcdef", other.pid)], capture_output=True, timeout=30)
        assert out.returncode == 0, out
        assert state(other.pid) not in ("Z", "gone")
    finally:
        other.kill()
        other.wait()
