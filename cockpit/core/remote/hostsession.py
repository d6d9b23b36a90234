"""A persistent shell on the host, beside the target's session: :class:`HostSession`.

A host probe that runs on every refresh (the GPU process list of a container, asked on the
Proxmox host) would pay for a new SSH channel each time: sshd forks, runs the login shell, tears
it down (about 100–250 ms against the lab's OpenSSH).  One long-lived ``/bin/sh`` on the host,
framed like the target's session (:class:`~.session.FramedSession`), answers in a few
milliseconds.  It holds one of the transport's channel slots while it lives, so the target's
session, the host's and the others stay under what sshd allows (``MaxSessions``).

Only an SSH transport to a container has one: for ``runtime = "none"`` the target's session is
already on the host, and a local host is one fork away.  When the host session cannot be opened
or dies, the command runs on a channel of its own (``run_host``) and the session is tried again
after :attr:`HostSession.retry_s`; a lost connection is the caller's error, as with any command.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import time
from typing import Any

from ..layers import Layer
from .base import CommandResult, RemoteError, Transport
from .channels import ChannelSlots, open_whole
from .procs import SSHShell
from .session import FramedSession, SessionProcess

__all__ = ["HostSession"]

log = logging.getLogger(__name__)

#: slots (channels beside the target's session) sshd must allow for the host's shell to keep one:
#: its own and at least one for everything else (log stream, host commands, uploads)
_ROOM = 2


class HostSession:
    """``run(cmd)`` on the host through a persistent framed shell where that pays, else ``run_host``."""

    retry_s = 60.0

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.session: FramedSession | None = None
        self.retry_at = 0.0
        self.last_error: RemoteError | None = None
        self.persistent = self._worth_it(transport)
        #: every shell this holds a channel slot for → its give-way watch (see ``_spawn``)
        self._shells: dict[SSHShell, asyncio.Future[None]] = {}
        #: grows with every close: a shell that opens after one is not kept
        self._closes = 0
        self._starting: asyncio.Future[CommandResult] | None = None

    @staticmethod
    def _worth_it(transport: Transport) -> bool:
        # an SSH transport exists only once its module was imported (the demo never imports asyncssh)
        ssh = sys.modules.get(f"{__package__}.ssh")
        return ssh is not None and isinstance(transport, ssh.SSHTransport) and transport.runtime.in_container

    async def _spawn(self) -> SessionProcess:
        conn = await self.transport.connect()
        # the shell holds one of the transport's channel slots while it lives (sshd's MaxSessions)
        slots = getattr(self.transport, "slots", None)
        if slots is None:
            return SSHShell(await _open(conn, None))
        if slots.limit < _ROOM:
            raise RemoteError(Layer.SSH, "sshd allows too few channels to keep a shell on the host", hint="sshd MaxSessions")
        try:
            got = await asyncio.wait_for(slots.acquire(), 5.0)
        except (asyncio.TimeoutError, TimeoutError):
            got = False
        if not got:
            raise RemoteError(Layer.SSH, "no SSH channel to spare for a shell on the host", hint="sshd MaxSessions")
        closes = self._closes
        proc = await open_whole(_open(conn, slots), functools.partial(_drop, slots))
        shell = self._keep(proc, slots)
        if closes != self._closes:  # closed while the channel opened: nobody's shell
            shell.close()
            raise RemoteError(Layer.SSH, "the host's shell was closed while it started")
        return shell

    def _keep(self, proc: Any, slots: ChannelSlots) -> SSHShell:
        """The shell on ``proc``, which gives its slot back once, however it is closed, and gives
        way when sshd allows too few channels (:meth:`_give_way`)."""
        def release_once() -> None:
            if self._shells.pop(shell, None) is not None:
                slots.closed()

        shell = SSHShell(proc, on_close=release_once)
        self._shells[shell] = asyncio.ensure_future(self._give_way(slots, shell, proc))
        return shell

    async def _give_way(self, slots: ChannelSlots, shell: SSHShell, proc: Any) -> None:
        """sshd refused another channel (MaxSessions lower than cockpit assumed): the host's shell
        gives its slot back at once, so the command waiting for one runs, and is not kept again.
        Ends by itself when the shell's channel closes (the connection went, the shell died)."""
        tight, gone = asyncio.ensure_future(slots.wait_below(_ROOM)), asyncio.ensure_future(proc.wait_closed())
        try:
            done, _ = await asyncio.wait({tight, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            tight.cancel()
            gone.cancel()
        if tight not in done:
            shell.close()  # its channel is closed: the slot is free, whether or not its session has noticed
            return
        log.info("sshd allows %d channel(s) beside the session: the host's shell gives its own back", slots.limit)
        self.retry_at = time.monotonic() + self.retry_s
        # this shell's own channel and slot first, whatever state its session is in (between shells,
        # still starting it): a command waits for exactly this slot
        shell.close()
        session, self.session = self.session, None
        if session is not None:
            await session.close()

    def _lost(self) -> Layer | None:
        return None if getattr(self.transport, "connected", True) else Layer.SSH

    async def run(self, command: str, *, timeout: float = 10.0) -> CommandResult:
        if self.persistent and time.monotonic() >= self.retry_at:
            if self.session is None:
                self.session = FramedSession(self._spawn, description=f"{self.transport.description} (host)",
                                             lost_layer=self._lost)
            try:
                return await self.session.run(command, timeout=timeout)
            except RemoteError as e:
                if self._lost() is not None:
                    raise  # the connection is gone: a channel of its own would fail the same way
                log.info("host session unavailable (%s): commands run on channels of their own for %gs", e, self.retry_s)
                self.last_error, self.retry_at = e, time.monotonic() + self.retry_s
                await self.close()
        return await self.transport.run_host(command, timeout=timeout)

    @property
    def ready(self) -> bool:
        """Its shell is up: a command now costs one framed round trip, no channel, no start-up."""
        return self.session is not None and self.session.alive

    def start_soon(self) -> None:
        """Start the shell in the background (a first command would wait for its channel and
        bootstrap, more than one channel of its own costs)."""
        if not self.persistent or self.ready or time.monotonic() < self.retry_at or self._starting is not None:
            return
        self._starting = asyncio.ensure_future(self.run(":", timeout=10))
        self._starting.add_done_callback(self._started)

    def _started(self, fut: asyncio.Future[CommandResult]) -> None:
        self._starting = None
        if not fut.cancelled() and fut.exception() is not None:
            log.info("host session not started: %s", fut.exception())

    async def close(self) -> None:
        starting = self._starting
        if starting is not None:
            starting.cancel()
        self._closes += 1
        for shell, watch in list(self._shells.items()):  # every shell's channel and slot, kept or not
            if watch is not asyncio.current_task():
                watch.cancel()
            shell.close()
        session, self.session = self.session, None
        if session is not None:
            await session.close()
        if starting is not None and starting is not asyncio.current_task():
            # its end is awaited here: a start cut short by the close ends with the closed session's
            # RemoteError, and left pending it surfaced at the event loop's shutdown as "unhandled
            # exception during asyncio.run() shutdown" after a headless command's verdict
            await asyncio.gather(starting, return_exceptions=True)


async def _open(conn: Any, slots: ChannelSlots | None) -> Any:
    """The host's ``/bin/sh`` on a channel in the slot the caller took (given back if none opens)."""
    import asyncssh  # noqa: PLC0415

    try:
        proc = await conn.create_process("/bin/sh", encoding=None)
    except BaseException as e:
        if slots is not None and isinstance(e, asyncssh.ChannelOpenError):
            slots.refused()
        elif slots is not None:
            slots.release()
        if isinstance(e, (asyncssh.Error, OSError)):
            raise RemoteError(Layer.SSH, f"could not open a shell on the host: {e}", hint="sshd MaxSessions may be reached") from None
        raise
    if slots is not None:
        slots.opened()
    return proc


def _drop(slots: ChannelSlots, proc: Any) -> None:
    """A shell's channel that opened for a caller that went: closed, its slot given back."""
    import asyncssh  # noqa: PLC0415

    try:
        proc.close()
    except (asyncssh.Error, OSError) as e:  # its connection is gone: the channel went with it
        log.debug("closing a host shell's channel: %r", e)
    finally:
        slots.closed()
