"""Adapters that give a running ``sh`` the :class:`~.session.SessionProcess` shape.

Two kinds: a local ``asyncio`` subprocess and an ``asyncssh`` channel process.  Both drain stderr
in the background into a bounded buffer, so a chatty stderr can never block the shell and the
last words of a dying session (``container '200' not running!``) are kept for the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

STDERR_KEEP = 16 * 1024


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
    async def spawn(cls, argv: list[str], **kw: Any) -> "LocalShell":
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

    async def readline(self) -> bytes:
        assert self._p.stdout is not None
        return await self._p.stdout.readline()

    async def readexactly(self, n: int) -> bytes:
        assert self._p.stdout is not None
        return await self._p.stdout.readexactly(n)

    def stderr_tail(self) -> bytes:
        return bytes(self._err.data)

    def closed(self) -> bool:
        return self._p.returncode is not None

    async def exit_status(self, timeout: float) -> int | None:
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            await asyncio.wait_for(self._p.wait(), timeout)
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._drain), 0.5)
        return self._p.returncode

    def close(self) -> None:
        """End the shell by closing its stdin (it exits at EOF after the current command).

        Not a kill of the process group: the local shell runs under a subreaper
        (:mod:`.reaper`) that must outlive cockpit while a job it adopted still runs, or that
        job would be handed to PID 1 and, where PID 1 never reaps, end as a zombie.
        """
        with contextlib.suppress(Exception):
            assert self._p.stdin is not None
            self._p.stdin.close()

    def kill(self) -> None:
        if self._p.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._p.pid, signal.SIGKILL)

    async def wait_closed(self) -> None:
        """Let the shell exit and its pipes reach EOF (kill it if it will not), so nothing is left for the GC."""
        try:
            assert self._p.stdout is not None
            while await asyncio.wait_for(self._p.stdout.read(65536), 1.0):
                pass
        except Exception:
            self.kill()
        with contextlib.suppress(Exception):
            assert self._p.stdout is not None
            while await asyncio.wait_for(self._p.stdout.read(65536), 1.0):
                pass
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._p.wait(), 2.0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._drain, 2.0)


class SSHShell:
    """An ``asyncssh`` process (one channel) running a shell inside the target."""

    def __init__(self, proc: Any, on_close: Any = None) -> None:
        self._p = proc
        self._err = _StderrBuffer()
        self._on_close = on_close
        self._drain = asyncio.ensure_future(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        with contextlib.suppress(Exception):
            while True:
                chunk = await self._p.stderr.read(4096)
                if not chunk:
                    return
                self._err.add(chunk)

    async def write(self, data: bytes) -> None:
        self._p.stdin.write(data)
        await self._p.stdin.drain()

    async def readline(self) -> bytes:
        return await self._p.stdout.readline()

    async def readexactly(self, n: int) -> bytes:
        return await self._p.stdout.readexactly(n)

    def stderr_tail(self) -> bytes:
        return bytes(self._err.data)

    def closed(self) -> bool:
        return self._p.exit_status is not None or self._p.channel.is_closing()

    async def exit_status(self, timeout: float) -> int | None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._p.wait_closed(), timeout)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self._drain), 0.5)
        return self._p.exit_status

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._p.close()
        if self._on_close is not None:
            cb, self._on_close = self._on_close, None
            cb()

    async def wait_closed(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._p.wait_closed(), 2.0)
        self._drain.cancel()
