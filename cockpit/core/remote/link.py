"""One SSH connection per host, shared by every target on it: :class:`HostLink`.

Ten containers on one Proxmox host cost one handshake: every :class:`~.ssh.SSHTransport` whose
connection parameters are the same, in the same event loop, uses the same link.  The link holds
what belongs to the connection rather than to a target: the asyncssh connection, the lock that
opens it, the channel slots (sshd's ``MaxSessions`` counts channels per connection, whichever
target opened them), the reconnect backoff and the last errors.  Each target keeps its own
persistent session (its own shell inside its own container) on a channel of that connection.

Links are found by event loop and parameters (a loop that is gone takes its links with it, so
a test's or a command's loop never hands a dead connection to the next), counted by their users
and closed when the last transport closes.

Every user keeps its persistent session open on the connection, and sshd counts sessions per
connection (``MaxSessions``, 10 by default): so a link takes at most :data:`USERS_PER_LINK` users
(their sessions, and two channels left for host commands and streams); the next target on that
host gets a second connection.  Sixteen containers on one host cost two handshakes, not sixteen
(measured by ``bench/bench_targets.py``; with one connection for all, sshd refused the 11th).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import weakref
from typing import Any

from .base import RemoteError
from .channels import MAX_CHANNELS, ChannelSlots
from .sshopts import Backoff, SSHParams, explain_connect_error

__all__ = ["HostLink", "acquire", "release", "shared_links", "USERS_PER_LINK"]

#: sessions on one connection: OpenSSH's default MaxSessions (10) less two channels for the rest
USERS_PER_LINK = 8


class HostLink:
    """The state of one SSH connection, whoever uses it."""

    def __init__(self, params: SSHParams) -> None:
        self.params = params
        self.conn: Any = None  # asyncssh.SSHClientConnection (the module stays unimported until needed)
        self.lock = asyncio.Lock()
        self.slots = ChannelSlots(MAX_CHANNELS - 1)  # one is the first session's
        self.backoff = Backoff()
        self.last_error: RemoteError | None = None
        self.lost_error: RemoteError | None = None
        self.connected_at: float | None = None
        self.connects = 0
        self.users = 0
        self.key: tuple[Any, ...] | None = None

    def on_lost(self, exc: Exception | None) -> None:
        if self.conn is None:
            return
        self.conn = None
        if exc is not None:
            self.lost_error = explain_connect_error(exc, self.params)

    def connected_now(self, conn: Any) -> None:
        self.conn = conn
        self.slots.reset()
        self.lost_error = None
        self.last_error = None
        self.backoff.succeeded()
        self.connected_at = time.time()
        self.connects += 1


_LINKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], HostLink]] = weakref.WeakKeyDictionary()


def _key(params: SSHParams) -> tuple[Any, ...]:
    d = dataclasses.asdict(params)
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(d.items()))


def acquire(params: SSHParams) -> HostLink:
    """The link for ``params`` in the running event loop (a private one outside any loop)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        link = HostLink(params)
        link.users = 1
        return link
    links = _LINKS.setdefault(loop, {})
    base = _key(params)
    shard = 0
    while (base, shard) in links and links[(base, shard)].users >= USERS_PER_LINK:
        shard += 1  # that connection has its sessions: another one to the same host
    key = (base, shard)
    found = links.get(key)
    if found is None:
        found = links[key] = HostLink(params)
        found.key = key
    found.users += 1
    # the other users' sessions take channels the slots do not see: leave sshd room for them
    found.slots.full = found.slots.limit = max(1, min(found.slots.full, 10 - found.users))
    return found


def release(link: HostLink) -> bool:
    """One user less; True when it was the last (the caller closes the connection)."""
    link.users -= 1
    if link.users > 0:
        # fewer sessions on the connection: the room they took is free again (unless sshd taught a lower limit)
        link.slots.full = max(1, min(MAX_CHANNELS - 1, 10 - link.users))
        if link.slots.learned is None:
            link.slots.limit = link.slots.full
        return False
    for links in list(_LINKS.values()):
        if link.key is not None and links.get(link.key) is link:
            del links[link.key]
    return True


def shared_links() -> list[HostLink]:
    """The links of the running event loop (for status and tests)."""
    try:
        return list(_LINKS.get(asyncio.get_running_loop(), {}).values())
    except RuntimeError:
        return []
