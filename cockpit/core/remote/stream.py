"""The read loop behind every transport's ``stream()``: chunks until EOF, under one deadline.

A transport opens its channel (a local process, an SSH channel) as an async context manager
that yields the channel's stdout reader and closes the channel on exit; :func:`read_stream`
drives it.  Nothing runs until the first chunk is asked for, and closing the iterator early (or a
timeout, or cancellation) closes the channel at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from .lines import CHUNK as LINES_CHUNK

__all__ = ["ChunkReader", "read_stream", "CHUNK"]

#: bytes asked for per read: all that is buffered (see :data:`.lines.CHUNK` for why that matters)
CHUNK = LINES_CHUNK


class ChunkReader(Protocol):
    """What both ``asyncio.StreamReader`` and asyncssh's ``SSHReader`` offer."""

    async def read(self, n: int = -1) -> bytes: ...


async def read_stream(channel: AbstractAsyncContextManager[ChunkReader], timeout: float | None = None) -> AsyncIterator[bytes]:
    """Yield what ``channel``'s reader gives until EOF; past ``timeout`` s (for the whole stream,
    not per chunk) ``asyncio.TimeoutError`` is raised."""
    async with channel as reader:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            chunk = await asyncio.wait_for(reader.read(CHUNK), left)
            if not chunk:
                break
            yield chunk
