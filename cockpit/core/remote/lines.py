"""Line caps for remote bytes: a line over :data:`LINE_MAX` is cut with a visible mark.

Whatever a remote command prints reaches cockpit through one of these, so a job or a command that
writes 50 MiB without a newline costs at most ``LINE_MAX`` bytes of memory and no exception: the
line's first ``LINE_MAX`` bytes are kept, the rest is counted and discarded, and the mark
``…[cockpit cut N bytes of this line]`` stands where the rest was, before the newline.

* :class:`LineCapper` caps a byte stream fed to it in pieces (the framed session's payloads);
* :class:`ChunkedReader` reads a channel in chunks (never a whole line at once): a capped
  ``readline`` for the session's header lines and ``feed_exact`` for its length-prefixed payloads;
* :func:`capped_lines` turns a transport's ``stream()`` chunks into capped lines.

``LINE_MAX`` sits above every byte-exact reader's chunk (the job reader and the log follower read at
most 1 MiB of a log per command), so a probe's payload is never altered: only a command that prints
more than 2 MiB without a newline is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

__all__ = ["LINE_MAX", "OUTPUT_MAX", "CHUNK", "LineCapper", "ChunkedReader", "capped_lines", "cut_mark", "drain"]

#: the longest line kept whole, in bytes (a newline not counted)
LINE_MAX = 2 << 20
#: the most bytes of one command's stdout (or stderr) kept; the rest is counted, not kept
OUTPUT_MAX = 32 << 20
#: bytes asked for per read of a channel: ``read(n)`` returns what is buffered, up to n.  Asked for
#: twice asyncssh's channel window (2 MiB), a read takes all that is buffered.  Smaller reads let
#: asyncssh's own buffer grow without bound under a slow reader: after a pause it re-opens the whole
#: window as soon as it delivers one packet, while the rest still waits (measured: 47 MiB held for a
#: 50 MiB stream read 64 KiB at a time by a reader that sleeps 1 ms per read; 4 MiB at a time: 4.3 MiB).
CHUNK = 4 << 20


def cut_mark(n: int) -> bytes:
    """What stands in a line where ``n`` bytes were cut."""
    return f" \u2026[cockpit cut {n} bytes of this line]".encode()


class LineCapper:
    """Collects bytes fed in pieces; every line keeps at most ``cap`` bytes (see the module doc).

    O(1) Python work per piece: pieces are split to at most ``cap`` bytes, so only the line that
    runs into a piece (and the one it leaves open) can be over the cap; the lines between its first
    and its last newline are copied as they are.
    """

    def __init__(self, cap: int = LINE_MAX, limit: int | None = None) -> None:
        self.cap = max(1, int(cap))
        #: the most bytes kept over the whole stream (None: no limit); past it bytes are only counted
        self.limit = limit
        self.out = bytearray()
        self.cut_bytes = 0  # over the whole stream
        self.cut_lines = 0
        self.dropped = 0  # bytes past ``limit``
        self._cur = 0  # bytes of the open line seen so far
        self._cut = 0  # bytes of the open line discarded so far

    def feed(self, data: bytes) -> None:
        if self.limit is not None:
            room = self.limit - len(self.out)
            if room < len(data):
                self.dropped += len(data) - max(0, room)
                data = data[: max(0, room)]
        if len(data) <= self.cap:
            self._feed(data)
            return
        for at in range(0, len(data), self.cap):
            self._feed(data[at : at + self.cap])

    def _feed(self, piece: bytes) -> None:
        first = piece.find(b"\n")
        if first < 0:
            self._extend(piece)
            return
        self._extend(piece[:first])
        self._end_line()
        last = piece.rfind(b"\n")
        if last > first:
            self.out += piece[first + 1 : last + 1]  # whole lines, each shorter than a piece
        self._extend(piece[last + 1 :])

    def _extend(self, seg: bytes) -> None:
        room = self.cap - self._cur
        if len(seg) <= room:
            self.out += seg
        else:
            keep = max(0, room)
            self.out += seg[:keep]
            self._cut += len(seg) - keep
        self._cur += len(seg)

    def _end_line(self) -> None:
        if self._cut:
            self._mark()
        self.out += b"\n"
        self._cur = 0

    def _mark(self) -> None:
        self.out += cut_mark(self._cut)
        self.cut_bytes += self._cut
        self.cut_lines += 1
        self._cut = 0

    def finish(self, not_sent: int = 0) -> bytes:
        """Everything fed, capped (an open last line that was cut gets its mark too); when bytes
        were dropped past ``limit`` (or ``not_sent`` never came), a last line says how many."""
        if self._cut:
            self._mark()
        gone = self.dropped + not_sent
        if gone:
            self.out += f"\n\u2026[cockpit: output cut after {len(self.out)} bytes; {gone} more bytes not kept]\n".encode()
        return bytes(self.out)


class ChunkedReader:
    """Reads a channel through ``read(n)`` (asyncio's and asyncssh's readers both have it) into a
    small buffer of its own: lines come back capped, payloads are fed on in chunks.

    ``read`` returns ``b""`` at EOF; whatever it raises (a broken pipe, a lost connection)
    propagates.  :meth:`feed_exact` raises :class:`EOFError` when the channel ends early.
    """

    def __init__(self, read: Callable[[int], Awaitable[bytes]]) -> None:
        self._read = read
        self._buf = bytearray()

    async def readline(self, cap: int = LINE_MAX) -> bytes:
        """One line with its newline, capped; the partial last line at EOF; ``b""`` at EOF."""
        kept = LineCapper(cap)
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                kept.feed(bytes(self._buf[: nl + 1]))
                del self._buf[: nl + 1]
                return kept.finish()
            kept.feed(bytes(self._buf))
            self._buf.clear()
            chunk = await self._read(CHUNK)
            if not chunk:
                return kept.finish()
            self._buf += chunk

    async def feed_exact(self, n: int, into: LineCapper) -> None:
        """Feed exactly the next ``n`` bytes into ``into`` (never holding more than a chunk)."""
        if self._buf:
            take = min(n, len(self._buf))
            into.feed(bytes(self._buf[:take]))
            del self._buf[:take]
            n -= take
        while n > 0:
            chunk = await self._read(min(CHUNK, n))
            if not chunk:
                raise EOFError(f"the channel ended {n} bytes before the end of a frame")
            if len(chunk) > n:  # a reader that gave more than asked: keep the rest for later
                self._buf += chunk[n:]
                chunk = chunk[:n]
            into.feed(chunk)
            n -= len(chunk)


async def capped_lines(chunks: AsyncIterator[bytes], cap: int = LINE_MAX) -> AsyncIterator[bytes]:
    """A stream's chunks as lines (each with its newline, except maybe the last), every one capped.

    Holds at most one line (``cap`` bytes and its mark) however long the lines are.
    """
    capper = LineCapper(cap)
    try:
        async for chunk in chunks:
            capper.feed(chunk)
            out = capper.out
            last = out.rfind(b"\n")
            if last >= 0:
                done = bytes(out[: last + 1])
                del out[: last + 1]
                at = 0
                while at < len(done):
                    nl = done.index(b"\n", at)
                    yield done[at : nl + 1]
                    at = nl + 1
        rest = capper.finish()
        if rest:
            yield rest
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


async def drain(read: Callable[[int], Awaitable[bytes]], into: LineCapper) -> None:
    """Read a channel to EOF into ``into`` (a command's stdout or stderr on a channel of its own)."""
    while True:
        chunk = await read(CHUNK)
        if not chunk:
            return
        into.feed(chunk)
