"""The front door, given option values that cannot work: a port out of range or in use, a host
that is not this machine's, a negative count or duration.  Each is a usage error (exit 2) that
names the option, said before anything starts, never a traceback, a lie ("no attempts yet") or a
failure later on.

Every test runs the installed ``cockpit`` in a subprocess, from a temporary HOME and directory.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.front_door_support import needs_cockpit, run

pytestmark = needs_cockpit


@pytest.mark.parametrize("argv, says", [
    (["--demo", "history", "--last", "-1"], "argument --last"),
    (["--demo", "history", "--last", "0"], "argument --last"),
    (["--demo", "compare", "1", "2", "--steps", "0"], "argument --steps"),
    (["--demo", "watch", "--once", "--timeout", "-1"], "argument --timeout"),
    (["--demo", "watch", "--once", "--debounce", "nan"], "argument --debounce"),
    (["--demo", "watch", "--once", "--debounce", "0"], "argument --debounce"),
    (["demo", "crash-later", "--after", "nan"], "argument --after"),
    (["demo", "hang", "--after", "-5"], "argument --after"),
    (["init", "127.0.0.1", "--port", "99999", "--yes", "-o", "out.toml"], "argument --port"),
    (["connect", "127.0.0.1", "--timeout", "0", "--yes", "-o", "out.toml"], "argument --timeout"),
    (["--demo", "serve", "--port", "70000"], "argument --port"),
    (["--demo", "serve", "--port", "0"], "argument --port"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_values_that_cannot_work_are_usage_errors(tmp_path: Path, argv: list[str], says: str) -> None:
    r = run(tmp_path, *argv)
    out = r.stdout + r.stderr
    assert r.returncode == 2, f"cockpit {' '.join(argv)} → rc {r.returncode}: {out}"
    assert "usage: cockpit" in r.stderr and says in r.stderr, out
    assert "Traceback" not in out and "no attempts yet" not in out
    assert not (tmp_path / "out.toml").exists()
    assert not (tmp_path / "home" / ".cache" / "cockpit" / "demo" / "workspace" / ".crash-later").exists(), "no crash was scheduled"


@pytest.fixture
def taken_port() -> object:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_serve_on_a_port_in_use_says_so_before_any_url(tmp_path: Path, taken_port: int) -> None:
    pytest.importorskip("textual_serve")
    r = run(tmp_path, "--demo", "serve", "--port", str(taken_port))
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"cannot listen on 127.0.0.1:{taken_port}" in r.stderr and "--port" in r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert "open: http" not in r.stdout, "no URL for a server that never listened"


def test_serve_on_a_host_that_is_not_this_machine_says_so(tmp_path: Path) -> None:
    pytest.importorskip("textual_serve")
    for host in ("no-such-host.invalid", "192.0.2.1"):  # unresolvable; TEST-NET-1, no address of this machine
        r = run(tmp_path, "--demo", "serve", "--host", host)
        assert r.returncode == 2, r.stdout + r.stderr
        assert host in r.stderr and "--host" in r.stderr and "Traceback" not in r.stdout + r.stderr
        assert "open: http" not in r.stdout
