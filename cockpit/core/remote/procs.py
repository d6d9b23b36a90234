"""Adapters that give a running ``sh`` the :class:`~.session.SessionProcess` shape.

Two kinds: a local ``asyncio`` subprocess and an ``asyncssh`` channel process.  Both drain stderr
in the background into a bounded buffer, so a chatty stderr can never block the shell and the
last words of a dying session (``container '200' not running!``) are kept for the error.

Closing and waiting never raise for what a dead or dying shell can do (a deadline passes, a pipe
or channel is gone); those are logged at debug level.  Anything else is a bug and propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncssh

log = logging.getLogger(__name__)

STDERR_KEEP = 16 * 1024

#: A deadline that passed (``asyncio.TimeoutError`` is ``TimeoutError`` only from Python 3.11).
_TIMEOUT = (asyncio.TimeoutError, TimeoutError)

#: What reading a local shell's pipe can raise once the shell is going: the deadline, the pipe's
#: error, or RuntimeError when a command's reader still waits on the same stream (a session
#: closed while a command runs).
_LOCAL_READ = (*_TIMEOUT, OSError, RuntimeError)


async def _wait(aw: Awaitable[object], timeout: float, what: str) -> None:
    """Await ``aw`` for at most ``timeout`` seconds, and no longer."""
    try:
        await asyncio.wait_for(aw, timeout)
    except _TIMEOUT:  # a dying shell that does not answer in time is an answer, not an error
        log.debug("%s: nothing within %g s", what, timeout)


class _StderrBuffer:
    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > STDERR_KEEP:
            del self.data[: len(self.data) - STDERR_KEEP]


class LocalShell:
    """A local ``asyncio`` subprocess running a shell."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._p = proc
        self._err = _StderrBuffer()
        self._drain = asyncio.ensure_future(self._drain_stderr())

    @classmethod
    async def spawn(cls, argv: list[str], **kw: Any) -> LocalShell:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=1 << 20,
            **kw,
        )
        return cls(proc)

    @property
    def pid(self) -> int:
        return self._p.pid

    async def _drain_stderr(self) -> None:
        assert self._p.stderr is not None
        while True:
            chunk = await self._p.stderr.read(4096)
            if not chunk:
                return
            self._err.add(chunk)

    async def write(self, data: bytes) -> None:
        assert self._p.stdin is not None
        self._p.stdin.write(data)
        await self._p.stdin.drain()

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes of the shell's stdout (``b""`` at EOF); lines are the session's business."""
        assert self._p.stdout is not None
        return await self._p.stdout.read(n)

    def stderr_tail(self) -> bytes:
        return bytes(self._err.data)

    def closed(self) -> bool:
        return self._p.returncode is not None

    async def exit_status(self, timeout: float) -> int | None:
        await _wait(self._p.wait(), timeout, "local shell exit")
        await _wait(asyncio.shield(self._drain), 0.5, "local shell stderr")
        return self._p.returncode

    def close(self) -> None:
        """End the shell by closing its stdin (it exits at EOF after the current command).

        Not a kill of the process group: the local shell runs under a subreaper
        (:mod:`.reaper`) that must outlive cockpit while a job it adopted still runs, or that
        job would be handed to PID 1 and, where PID 1 never reaps, end as a zombie.
        """
        if self._p.stdin is None:
            return
        try:
            self._p.stdin.close()
        except (OSError, RuntimeError) as e:  # the pipe is already broken, or the loop is closing
            log.debug("closing the local shell's stdin: %r", e)

    def kill(self) -> None:
        if self._p.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._p.pid, signal.SIGKILL)

    async def wait_closed(self) -> None:
        """Let the shell exit and its pipes reach EOF (kill it if it will not), so nothing is left for the GC."""
        if not await self._read_to_eof():
            self.kill()
            await self._read_to_eof()
        await _wait(self._p.wait(), 2.0, "local shell exit")
        try:
            await asyncio.wait_for(self._drain, 2.0)
        except (*_TIMEOUT, OSError) as e:  # its stderr pipe stayed open or broke: the tail kept so far is enough
            log.debug("draining the local shell's stderr: %r", e)

    async def _read_to_eof(self) -> bool:
        """Discard stdout until EOF; False when a read failed or stayed silent for 1 s."""
        if self._p.stdout is None:
            return True
        try:
            while await asyncio.wait_for(self._p.stdout.read(65536), 1.0):
                pass
        except _LOCAL_READ as e:  # the caller kills the shell, or has already
            log.debug("reading the local shell's stdout to EOF: %r", e)
            return False
        return True


class SSHShell:
    """An ``asyncssh`` process (one channel) running a shell inside the target."""

    def __init__(self, proc: asyncssh.SSHClientProcess[bytes], on_close: Callable[[], None] | None = None) -> None:
        import asyncssh  # here, not at the top: the local transport uses this module without asyncssh

        #: what a channel raises once its connection is gone
        self._lost: tuple[type[Exception], ...] = (asyncssh.Error, OSError)
        self._p = proc
        self._err = _StderrBuffer()
        self._on_close = on_close
        self._drain = asyncio.ensure_future(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        try:
            while True:
                chunk = await self._p.stderr.read(4096)
                if not chunk:
                    return
                self._err.add(chunk)
        except self._lost as e:  # the connection went: the session's reader reports it, the tail is kept
            log.debug("SSH shell stderr ended: %r", e)

    async def write(self, data: bytes) -> None:
        try:
            self._p.stdin.write(data)
            await self._p.stdin.drain()
        except self._lost as e:  # the channel or its connection is gone: the session reports it
            raise ConnectionError(f"the SSH channel is gone: {e}") from e

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes of the channel's stdout (``b""`` at EOF); asyncssh's own readline has no cap."""
        try:
            return await self._p.stdout.read(n)
        except self._lost as e:
            raise ConnectionError(f"the SSH channel is gone: {e}") from e

    def stderr_tail(self) -> bytes:
        return bytes(self._err.data)

    def closed(self) -> bool:
        return self._p.exit_status is not None or self._p.channel.is_closing()

    async def exit_status(self, timeout: float) -> int | None:
        await _wait(self._p.wait_closed(), timeout, "SSH shell exit")
        await _wait(asyncio.shield(self._drain), 0.5, "SSH shell stderr")
        return self._p.exit_status

    def close(self) -> None:
        try:
            self._p.close()
        except self._lost as e:  # the connection is already gone: the channel is closed with it
            log.debug("closing the SSH shell's channel: %r", e)
        if self._on_close is not None:
            cb, self._on_close = self._on_close, None
            cb()

    async def wait_closed(self) -> None:
        await _wait(self._p.wait_closed(), 2.0, "SSH shell close")
        self._drain.cancel()
