"""A transport that runs everything on this machine, with the same interface as SSH.

Used by the built-in demo and by unit tests.  With ``runtime = "pct"`` and ``pct`` pointing to an
emulator it even reaches emulated containers, exactly like the SSH transport does, minus SSH.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from .base import CommandResult, Transport
from .lines import OUTPUT_MAX, LineCapper, drain
from .procs import LocalShell
from .session import FramedSession
from .stream import ChunkReader, read_stream

if TYPE_CHECKING:  # pragma: no cover - the runtimes build on the transports
    from ..runtimes.base import Runtime

__all__ = ["LocalTransport"]


async def run_local(command: str, *, timeout: float, input: bytes | None = None, env: dict[str, str] | None = None) -> CommandResult:
    """Run ``sh -c command`` locally with a timeout that kills its whole process group; its output
    is read in chunks, every line capped and each stream kept to OUTPUT_MAX (:mod:`.lines`)."""
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True, env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = LineCapper(limit=OUTPUT_MAX), LineCapper(limit=OUTPUT_MAX)

    async def feed() -> None:
        if input is None or proc.stdin is None:
            return
        try:
            proc.stdin.write(input)
            await proc.stdin.drain()
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):  # the command did not read all of it: its exit code says why
            pass

    try:
        await asyncio.wait_for(asyncio.gather(drain(proc.stdout.read, out), drain(proc.stderr.read, err), feed()), timeout)
        await proc.wait()
    except (asyncio.TimeoutError, TimeoutError):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):  # a child that left the group may hold the pipes
            await asyncio.wait_for(asyncio.gather(drain(proc.stdout.read, out), drain(proc.stderr.read, err)), 2.0)
        await proc.wait()
        return CommandResult(command, 124, out.finish(), err.finish(), time.monotonic() - t0, timed_out=True)
    return CommandResult(command, proc.returncode if proc.returncode is not None else -1, out.finish(), err.finish(), time.monotonic() - t0)


class LocalTransport(Transport):
    def __init__(self, runtime: Runtime, *, env: dict[str, str] | None = None) -> None:
        self.runtime = runtime
        self.env = env
        self.description = f"local {self.runtime.describe()}"
        self.session = FramedSession(self._spawn, words=self.runtime.start_words, description=self.description)

    async def _spawn(self) -> LocalShell:
        shell = self.runtime.shell()  # "/bin/sh" on a host; the runtime's own entry otherwise
        argv = ["/bin/sh", "-c", shell if self.runtime.in_container else f"exec {shell}"]
        if not self.runtime.in_container:
            # jobs launched from this shell are adopted and reaped by the wrapper, not left to PID 1
            argv = [sys.executable, "-m", "cockpit.core.remote.reaper", *argv]
        return await LocalShell.spawn(argv, env=self.env)

    async def connect(self, *, force: bool = False) -> object:
        return None

    async def run(self, command: str, *, timeout: float = 10.0, cheap: bool = False) -> CommandResult:
        return await self.session.run(command, timeout=timeout, cheap=cheap)

    async def run_host(self, command: str, *, timeout: float = 10.0, input: bytes | None = None) -> CommandResult:
        return await run_local(command, timeout=timeout, input=input, env=self.env)

    async def run_channel(self, command: str, *, timeout: float = 60.0, input: bytes | None = None) -> CommandResult:
        return await run_local(self.runtime.wrap(command), timeout=timeout, input=input, env=self.env)

    def stream(self, command: str, *, timeout: float | None = None) -> AsyncIterator[bytes]:
        return read_stream(self._stream_channel(self.runtime.wrap(command)), timeout)

    def stream_host(self, command: str, *, timeout: float | None = None) -> AsyncIterator[bytes]:
        return read_stream(self._stream_channel(command), timeout)

    @contextlib.asynccontextmanager
    async def _stream_channel(self, command: str) -> AsyncIterator[ChunkReader]:
        """``command`` (already wrapped for the target) as a process of its own, its stdin open while
        it lives (as an SSH channel's: :func:`.follow.wrap`); killed (its group) on exit."""
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", command,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True, env=self.env,
        )
        assert proc.stdout is not None
        try:
            yield proc.stdout
        finally:
            if proc.stdin is not None:
                proc.stdin.close()  # its transport is closed only once every pipe is (else: at GC, maybe after the loop)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 9)
                await proc.wait()

    async def reset_session(self) -> None:
        await self.session.close()

    async def close(self) -> None:
        await self.session.close()
