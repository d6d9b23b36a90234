"""The SSH transport: one asyncssh connection per host, a persistent session, capped channels.

* One connection per host, opened lazily, with ``keepalive_interval`` and ``connect_timeout`` from
  config; ``~/.ssh/config`` is honoured, except where it would weaken safety: host keys are always
  verified and the agent is forwarded only with ``[ssh] forward_agent`` (:mod:`.sshopts`).
* Every way of failing to reach the host becomes a :class:`RemoteError` in layer ``ssh`` with a
  message a person can act on (:func:`explain_connect_error`).
* A lost connection is noticed (``connection_lost``), reported, and rebuilt on the next call, no
  sooner than a capped exponential backoff allows (:class:`Backoff`), so a polling UI does not
  hammer a host that is down.
* At most :data:`MAX_CHANNELS` channels are open at once: the persistent session holds one, the
  others (host commands, streams, uploads) queue for a slot; when sshd's ``MaxSessions`` is lower,
  cockpit learns it from the first refusal (:mod:`.channels`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import asyncssh

from ..layers import Layer
from .base import CommandResult, RemoteError, Transport
from .channels import MAX_CHANNELS, ChannelSlots, open_whole
from .lines import OUTPUT_MAX, LineCapper, drain
from .link import HostLink
from .link import acquire as link_acquire
from .link import release as link_release
from .procs import SSHShell
from .session import FramedSession
from .sshopts import Backoff, SSHParams, connection_options, explain_connect_error
from .stream import ChunkReader, read_stream

if TYPE_CHECKING:  # pragma: no cover - the runtimes build on the transports
    from ..runtimes.base import Runtime

#: seconds between tries when sshd refuses a channel while none of cockpit's others is open
REFUSAL_RETRY_S = (0.05, 0.15, 0.4)

__all__ = ["SSHTransport", "SSHParams", "Backoff", "explain_connect_error", "MAX_CHANNELS"]

log = logging.getLogger(__name__)


class _Client(asyncssh.SSHClient):
    def __init__(self, link: HostLink) -> None:
        self._link = link

    def connection_lost(self, exc: Exception | None) -> None:
        self._link.on_lost(exc)


class SSHTransport(Transport):
    def __init__(self, params: SSHParams, runtime: Runtime) -> None:
        self.params = params
        self.runtime = runtime
        self.description = f"{params.where} {self.runtime.describe()}"
        self._link: HostLink | None = None  # the host's connection, shared with other targets on it (see .link)
        self.session = FramedSession(self._spawn_session, words=self.runtime.start_words, description=self.description, lost_layer=self._lost_layer)
        #: channels that opened for callers that went, being closed (see ``_channel``)
        self._settling: set[asyncio.Task[None]] = set()

    # -- connection (its state lives in the host's link, shared by every target on the host) --
    @property
    def link(self) -> HostLink:
        if self._link is None:
            self._link = link_acquire(self.params)
        return self._link

    @property
    def _conn(self) -> asyncssh.SSHClientConnection | None:
        return self.link.conn  # type: ignore[no-any-return]

    @_conn.setter
    def _conn(self, conn: asyncssh.SSHClientConnection | None) -> None:
        self.link.conn = conn

    @property
    def slots(self) -> ChannelSlots:
        return self.link.slots

    @property
    def backoff(self) -> Backoff:
        return self.link.backoff

    @property
    def last_error(self) -> RemoteError | None:
        return self.link.last_error

    @property
    def lost_error(self) -> RemoteError | None:
        return self.link.lost_error

    @property
    def connected_at(self) -> float | None:
        return self.link.connected_at

    @property
    def connects(self) -> int:
        """Handshakes made on this target's host connection (by any target sharing it)."""
        return self.link.connects

    def _on_lost(self, exc: Exception | None) -> None:
        self.link.on_lost(exc)

    def _lost_layer(self) -> Layer | None:
        return Layer.SSH if self._conn is None else None

    @property
    def connected(self) -> bool:
        return self._conn is not None

    async def connect(self, *, force: bool = False) -> asyncssh.SSHClientConnection:
        link = self.link
        async with link.lock:
            if link.conn is not None:
                return link.conn  # type: ignore[no-any-return]
            if not force and self.last_error is not None and self.backoff.wait_s > 0:
                err = self.last_error
                raise RemoteError(err.layer, err.message, hint=f"retrying in {self.backoff.wait_s:.1f}s", output=err.output)
            try:
                options = await asyncio.to_thread(connection_options, self.params)
                conn, _ = await asyncssh.create_connection(lambda: _Client(link), self.params.host, **options)
            except RemoteError as e:  # host keys would not be checked: refused before any connection
                link.last_error = e
                self.backoff.failed()
                raise
            except Exception as e:  # noqa: BLE001 - every failure to connect (asyncssh, OS, DNS, bad options) is re-raised as a layered, explained RemoteError
                err = explain_connect_error(e, self.params)
                link.last_error = err
                self.backoff.failed()
                raise err from None
            link.connected_now(conn)
            return conn

    async def _spawn_session(self) -> SSHShell:
        conn = await self.connect()  # the session's channel is the slot the others leave free
        try:
            proc = await open_whole(self._open(conn, self.runtime.shell(), stdin=asyncssh.PIPE), _close_quietly)
        except (asyncssh.Error, OSError) as e:
            raise self._channel_error(e) from None
        return SSHShell(proc)

    async def _open(self, conn: asyncssh.SSHClientConnection, command: str, *, stdin: Any) -> asyncssh.SSHClientProcess[bytes]:
        """Open a channel; a refusal is tried again a few times, shortly after: sshd still counts a
        channel that was just closed until it has reaped the process behind it."""
        for delay in (*REFUSAL_RETRY_S, None):
            try:
                return await conn.create_process(command, encoding=None, stdin=stdin)
            except asyncssh.ChannelOpenError:
                if delay is None:
                    raise
                await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last try returns or raises")

    def _channel_error(self, e: BaseException) -> RemoteError:
        if self._conn is None or isinstance(e, (asyncssh.ConnectionLost, asyncssh.DisconnectError, ConnectionError)):
            self._conn = None
            return explain_connect_error(e, self.params)
        if isinstance(e, asyncssh.ChannelOpenError):
            return self._refused(e, self.slots.in_use + (1 if self.session.alive else 0))
        return RemoteError(Layer.SSH, f"could not open an SSH channel to {self.params.where}: {e}", hint="sshd MaxSessions may be exhausted")

    def _refused(self, e: object, open_now: int) -> RemoteError:
        return RemoteError(
            Layer.SSH, f"sshd on {self.params.where} refused a new SSH channel ({e}) with {open_now} open: its MaxSessions is reached",
            hint=f"cockpit needs 2 channels on one connection (the session and one more) and uses up to {MAX_CHANNELS}: "
                 "raise MaxSessions in the host's sshd_config (OpenSSH's default is 10)")

    @contextlib.asynccontextmanager
    async def _channel(self, command: str, *, stdin: Any) -> AsyncIterator[asyncssh.SSHClientProcess[bytes]]:
        """``command`` on a channel of its own, in one of the slots beside the session's (see
        :mod:`.channels`: a refusal by sshd lowers the limit and the command waits for a slot).

        The slot is given back on every path.  A caller cancelled while its channel opens (a stream
        closed because the limit fell, a deadline) does not cut the open short (:func:`.open_whole`):
        a refusal is still learned (the host's shell and the streams give way on it) and a channel
        sshd grants is closed and its slot given back.
        """
        conn = await self.connect()
        slots = self.slots  # this connection's, even if the transport is closed meanwhile
        while True:
            if not await slots.acquire():
                raise self._refused("administratively prohibited", 1 if self.session.alive else 0)
            proc = await open_whole(self._open_in_slot(conn, slots, command, stdin=stdin), functools.partial(self._abandoned, slots))
            if proc is not None:
                break
            log.info("sshd refused a channel: cockpit now opens at most %d beside the session", slots.limit)
        try:
            yield proc
        finally:
            await _close_channel(proc, slots)

    async def _open_in_slot(self, conn: asyncssh.SSHClientConnection, slots: ChannelSlots, command: str, *,
                            stdin: Any) -> asyncssh.SSHClientProcess[bytes] | None:
        """One try at a channel in the slot the caller took: its process (the slot stays taken until
        the channel is closed), or None when sshd refused it (the slot given back, the limit lowered)."""
        beside = slots.in_use > 1  # others are open: a refusal means "wait for one of them"
        try:
            try:
                proc = await (conn.create_process(command, encoding=None, stdin=stdin) if beside else self._open(conn, command, stdin=stdin))
            except asyncssh.ChannelOpenError:
                if not beside or slots.in_use > 1:
                    raise
                # the others closed while it was asked: sshd may count them until it has reaped what
                # ran in them, so this is no proof that it allows none beside the session; ask alone
                proc = await self._open(conn, command, stdin=stdin)
        except asyncssh.ChannelOpenError as e:
            if slots.refused() <= 0:
                raise self._refused(e, 1 if self.session.alive else 0) from None
            return None
        except BaseException as e:
            slots.release()
            if isinstance(e, (asyncssh.Error, OSError)):
                raise self._channel_error(e) from None
            raise
        slots.opened()
        return proc

    def _abandoned(self, slots: ChannelSlots, proc: asyncssh.SSHClientProcess[bytes] | None) -> None:
        """A channel that opened for a caller that went: closed, its slot then given back."""
        if proc is None:
            return  # refused: its slot given back and the limit lowered already
        task = asyncio.ensure_future(_close_channel(proc, slots))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    # -- commands --------------------------------------------------------------------------
    async def run(self, command: str, *, timeout: float = 10.0, cheap: bool = False) -> CommandResult:
        return await self.session.run(command, timeout=timeout, cheap=cheap)

    async def _exec(self, host_command: str, *, timeout: float, input: bytes | None) -> CommandResult:
        """``host_command`` on a channel of its own; its output read in chunks, every line capped
        and each stream kept to OUTPUT_MAX (asyncssh's ``run`` would hold all of it)."""
        t0 = time.monotonic()
        out, err = LineCapper(limit=OUTPUT_MAX), LineCapper(limit=OUTPUT_MAX)
        async with self._channel(host_command, stdin=asyncssh.PIPE if input is not None else asyncssh.DEVNULL) as proc:
            try:
                if input is not None:
                    proc.stdin.write(input)
                    proc.stdin.write_eof()
                await asyncio.wait_for(asyncio.gather(drain(proc.stdout.read, out), drain(proc.stderr.read, err)), timeout)
                await asyncio.wait_for(proc.wait_closed(), max(1.0, timeout - (time.monotonic() - t0)))
            except (asyncio.TimeoutError, TimeoutError):
                return CommandResult(host_command, 124, out.finish(), err.finish(), time.monotonic() - t0, timed_out=True)
            except (asyncssh.Error, OSError) as e:
                raise self._channel_error(e) from None
        code = proc.exit_status
        if code is None or code < 0:
            sig = proc.exit_signal[0] if proc.exit_signal else None
            code = 128 + _signum(sig) if sig else -1
        return CommandResult(host_command, code, out.finish(), err.finish(), time.monotonic() - t0)

    async def run_host(self, command: str, *, timeout: float = 10.0, input: bytes | None = None) -> CommandResult:
        return await self._exec(command, timeout=timeout, input=input)

    async def run_channel(self, command: str, *, timeout: float = 60.0, input: bytes | None = None) -> CommandResult:
        """Run ``command`` inside the target on its own channel (for uploads and long actions)."""
        return await self._exec(self.runtime.wrap(command), timeout=timeout, input=input)

    def stream(self, command: str, *, timeout: float | None = None) -> AsyncIterator[bytes]:
        return read_stream(self._stream_channel(self.runtime.wrap(command)), timeout)

    def stream_host(self, command: str, *, timeout: float | None = None) -> AsyncIterator[bytes]:
        return read_stream(self._stream_channel(command), timeout)

    @contextlib.asynccontextmanager
    async def _stream_channel(self, host_command: str) -> AsyncIterator[ChunkReader]:
        """``host_command`` on a channel of its own (one of the capped slots); its stdin stays open
        while the channel lives, so a long-lived tool can be ended when it closes (:func:`.follow.wrap`).
        A connection lost while the caller reads is a :class:`RemoteError` (ssh), as for a command."""
        async with self._channel(host_command, stdin=asyncssh.PIPE) as proc:
            try:
                yield proc.stdout
            except (asyncio.TimeoutError, TimeoutError):
                raise  # the caller's own deadline (an OSError since Python 3.11): not the link's
            except (asyncssh.Error, OSError) as e:
                raise self._channel_error(e) from None

    async def reset_session(self) -> None:
        await self.session.close()

    async def close(self) -> None:
        await self.session.close()
        if self._settling:  # channels opened for callers that went: closed before the connection
            await asyncio.gather(*self._settling, return_exceptions=True)
        link, self._link = self._link, None
        if link is None or not link_release(link):
            return  # never connected, or another target on this host still uses the connection
        conn, link.conn = link.conn, None
        if conn is not None:
            conn.close()
            try:
                await asyncio.wait_for(conn.wait_closed(), 2.0)
            except Exception:  # noqa: BLE001 - closed already; waiting for the end is best effort (a timeout, a dead peer): debug-logged
                log.debug("waiting for the SSH connection to close failed", exc_info=True)


def _close_quietly(proc: asyncssh.SSHClientProcess[bytes]) -> None:
    with contextlib.suppress(asyncssh.Error, OSError):  # its connection is gone: the channel went with it
        proc.close()


async def _close_channel(proc: asyncssh.SSHClientProcess[bytes], slots: ChannelSlots) -> None:
    """Close a channel and give its slot back, even if this is cancelled while it waits."""
    proc.close()
    try:  # sshd counts a channel until its close is acknowledged: the slot is free after that
        await asyncio.wait_for(proc.wait_closed(), 2.0)
    except (asyncio.TimeoutError, TimeoutError, asyncssh.Error, OSError) as e:
        log.debug("closing a channel: %r", e)
    finally:
        slots.closed()


def _signum(name: str) -> int:
    import signal

    with contextlib.suppress(AttributeError):
        return int(getattr(signal, "SIG" + name))
    return 0


def default_identity_files() -> list[str]:
    home = os.path.expanduser("~/.ssh")
    return [os.path.join(home, n) for n in ("id_ed25519", "id_ecdsa", "id_rsa") if os.path.exists(os.path.join(home, n))]
