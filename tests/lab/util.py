"""Small helpers shared by the lab and its tests: waiting on conditions (``wait_for``, and
``await_for`` in async tests: the only deadline-polling loops of the suite), free ports, /proc reads."""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A condition did not become true before its deadline."""


#: every deadline times this (``COCKPIT_WAIT_SCALE``, default 1): a loaded machine (CI's two workers
#: with a lab each) gets more time for what must happen, never a shorter wait for what must not
WAIT_SCALE = max(1.0, float(os.environ.get("COCKPIT_WAIT_SCALE") or 1.0))


class _Deadline:
    """The polling schedule shared by :func:`wait_for` and :func:`await_for`: a first check at
    once, then a short interval growing 1.5x up to ``max_interval``, never past the deadline.

    A check that costs more than the interval (a remote command, a /proc scan) is followed by a
    wait as long as the check took: polling never takes more than half of the time (a back-to-back
    loop of checks starves what it waits for on a loaded machine), and cheap checks stay quick."""

    def __init__(self, timeout: float, interval: float, max_interval: float) -> None:
        timeout *= WAIT_SCALE
        self.timeout = timeout
        self.end = time.monotonic() + timeout
        self.delay = interval
        self.max_interval = max(interval, max_interval)

    def next_delay(self, predicate: Callable[..., object], message: str | Callable[[], str] | None,
                   spent: float = 0.0) -> float:
        """Seconds to wait before the next check (``spent``: what the last check took); raises
        :class:`WaitTimeout` once time is up."""
        left = self.end - time.monotonic()
        if left <= 0:
            text = message() if callable(message) else message
            name = getattr(predicate, "__name__", repr(predicate))
            raise WaitTimeout(f"condition {name} not met within {self.timeout:g}s" + (f": {text}" if text else ""))
        delay = min(max(self.delay, spent), left)
        self.delay = min(self.delay * 1.5, self.max_interval)
        return delay


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 5.0,
    message: str | Callable[[], str] | None = None,
    *,
    interval: float = 0.01,
    max_interval: float = 0.2,
) -> T:
    """Call ``predicate`` until it returns a truthy value, and return that value.

    The tests' one deadline-polling helper: the first check is immediate, then it polls with a
    short, growing interval (no fixed sleeps) and raises ``WaitTimeout`` once ``timeout`` seconds
    have passed.  Exceptions from the predicate propagate.  ``message`` (a string, or a callable
    producing one to show the last observed state) is added to the error.
    """
    deadline = _Deadline(timeout, interval, max_interval)
    while True:
        start = time.monotonic()
        value = predicate()
        if value:
            return value
        time.sleep(deadline.next_delay(predicate, message, time.monotonic() - start))


async def await_for(
    predicate: Callable[[], T | Awaitable[T]],
    timeout: float = 5.0,
    message: str | Callable[[], str] | None = None,
    *,
    interval: float = 0.01,
    max_interval: float | None = None,
    pause: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> T:
    """:func:`wait_for` for async tests: waits with ``await pause(seconds)`` between checks, so the
    event loop keeps running (a Textual test passes ``pause=pilot.pause`` to let the app work).

    The interval stays fixed unless ``max_interval`` is given: async tests often wait for a
    short-lived state (a save being settled), which a slowed-down poll could miss.  The predicate
    may be a coroutine function (a condition that needs a remote call): it is awaited each time.
    """
    deadline = _Deadline(timeout, interval, interval if max_interval is None else max_interval)
    while True:
        start = time.monotonic()
        got = predicate()
        value = await got if inspect.isawaitable(got) else got
        if value:
            return value
        await pause(deadline.next_delay(predicate, message, time.monotonic() - start))


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


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


def pids_where(match: Callable[[list[bytes]], bool]) -> list[int]:
    """Pids of the processes whose argv (``/proc/PID/cmdline`` split on NUL) satisfies ``match``
    (the streams' tools a test started: ``dmesg --follow``, ``nvidia-smi -lms``, ``tail -F``)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as fh:
                    argv = fh.read().split(b"\0")
            except OSError:
                continue
            if match(argv):
                out.append(int(d))
    return out
