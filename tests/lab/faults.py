"""Fault injection for the lab, seen from the host side (the test process is root on the lab host).

Counting what cockpit holds open, from sshd's point of view, not cockpit's:

* :func:`connections`: sshd's per-connection processes (``sshd: root@notty``), children of the
  listener;
* :func:`channels`: what runs on each connection's channels (one child process per open channel);
* :func:`session_shells`: the long-lived shells inside a container (``pct exec CTID -- /bin/sh``,
  i.e. a bare ``/bin/sh`` under ``nsenter -t <its init>``), the persistent sessions;
* :func:`host_pid`: the host pid of a process known by its pid inside a container.

And breaking things: :func:`cut_connections` (kill sshd's per-connection processes: the client sees
its connection reset), :func:`kill_session_shell`.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from .sshd import Lab
from .util import children_of


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [p.decode(errors="replace") for p in raw.split(b"\0") if p]


def connections(lab: Lab) -> list[int]:
    """Host pids of sshd's per-connection processes."""
    return children_of(lab.sshd_pid) if lab.sshd_pid else []


def channels(lab: Lab) -> dict[int, list[int]]:
    """Per connection, the host pids of its channels' processes (one per open channel)."""
    return {conn: children_of(conn) for conn in connections(lab)}


def channel_count(lab: Lab) -> int:
    return sum(len(v) for v in channels(lab).values())


def session_shells(lab: Lab, ctid: int) -> list[int]:
    """Host pids of the container's long-lived ``/bin/sh`` shells (cockpit's persistent sessions)."""
    init = lab.container_init_pid(ctid)
    if init is None:
        return []
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if _cmdline(pid) != ["/bin/sh"]:
            continue
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parent = _cmdline(ppid)
        if parent[:3] == ["nsenter", "-t", str(init)]:
            out.append(pid)
    return sorted(out)


def host_pid(ns_pid: int, ctid_init: int) -> int | None:
    """The host pid of the process that is ``ns_pid`` inside the PID namespace of ``ctid_init``."""
    try:
        ns = os.readlink(f"/proc/{ctid_init}/ns/pid")
    except OSError:
        return None
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{name}/ns/pid") != ns:
                continue
            for line in Path(f"/proc/{name}/status").read_text().splitlines():
                if line.startswith("NSpid:") and line.split()[-1] == str(ns_pid):
                    return int(name)
        except OSError:
            continue
    return None


def cut_connections(lab: Lab) -> int:
    """Kill every sshd per-connection process (the network cut, from the server side)."""
    return lab.drop_connections()


def kill_session_shell(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
