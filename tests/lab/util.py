"""Small helpers shared by the lab and its tests: waiting on conditions, free ports, /proc reads."""

from __future__ import annotations

import os
import socket
import time
from typing import Callable, TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A condition did not become true before its deadline."""


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 5.0,
    *,
    interval: float = 0.01,
    max_interval: float = 0.2,
    message: str | Callable[[], str] | None = None,
) -> T:
    """Call ``predicate`` until it returns a truthy value, and return that value.

    Polls with a short, growing interval (no fixed sleeps: the first check is immediate) and raises
    ``WaitTimeout`` once ``timeout`` seconds have passed.  Exceptions from the predicate propagate.
    ``message`` (a string or a callable producing one) is added to the error, which is useful to
    show the last observed state.
    """
    deadline = time.monotonic() + timeout
    delay = interval
    while True:
        value = predicate()
        if value:
            return value
        now = time.monotonic()
        if now >= deadline:
            text = message() if callable(message) else message
            name = getattr(predicate, "__name__", repr(predicate))
            raise WaitTimeout(f"condition {name} not met within {timeout:.1f}s" + (f": {text}" if text else ""))
        time.sleep(min(delay, max(0.0, deadline - now)))
        delay = min(delay * 1.5, max_interval)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def ssh_banner(host: str, port: int, timeout: float = 1.0) -> str | None:
    """The SSH identification string the server sends first, or None if it cannot be read."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            data = b""
            while b"\n" not in data and len(data) < 512:
                chunk = s.recv(256)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    line = data.split(b"\n", 1)[0].strip().decode("ascii", "replace")
    return line if line.startswith("SSH-") else None


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, starttime) of a host pid from /proc/PID/stat, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = data[data.rindex(")") + 2 :].split()
    return rest[0], int(rest[1]), int(rest[19])


def pid_alive(pid: int) -> bool:
    """True if the host pid exists and is not a zombie."""
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def children_of(pid: int) -> list[int]:
    """Host pids whose parent is ``pid`` (scans /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None and st[1] == pid:
                out.append(int(name))
    return out


async def await_for(predicate: Callable[[], T], timeout: float = 5.0, *, interval: float = 0.01,
                    message: str | None = None) -> T:
    """``wait_for`` for async tests: polls without blocking the event loop."""
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"condition not met within {timeout:.1f}s" + (f": {message}" if message else ""))
        await asyncio.sleep(interval)
