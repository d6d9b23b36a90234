"""Waiting for the job's log to change without polling it: one ``tail -F`` armed while it is quiet.

A quiet log polled every half second costs a round trip and three remote processes each time,
all day.  :class:`LogWaker` instead arms one ``tail -c +OFFSET -F -- PATH`` on a channel of its
own once the log went quiet (``OFFSET`` is where the poll stopped, so bytes written between the
poll and the arming wake it at once), and returns at the first byte it prints: the log changed,
and the ordinary log probe (:func:`~.logs.log_probe_command`) reads it with all its checks
(inode, truncation, the overlap).  The stream is then closed (the wrapper ends ``tail`` when its
channel closes: :func:`~cockpit.core.remote.follow.wrap`).  While lines flow the poll runs every
0.1 s as before and nothing is armed, so the log's bytes cross the link once.

``tail -F`` waits for a file that does not exist yet, and follows it across truncation and
replacement, waking on each.  A ``tail`` that fails by itself before printing anything (one
without ``-F``: exit status 1..127) makes the waker ``unsupported``: the caller polls as before.
The caller also polls at a long period while armed, so a waker that misses a change costs latency,
never data.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import time
from collections.abc import AsyncIterator, Callable

from ..remote.base import RemoteError
from ..remote.follow import failed_by_itself, wrap
from .logs import LOG_MARK

__all__ = ["LogWaker", "waker_command"]

log = logging.getLogger(__name__)


def waker_command(path: str, offset: int) -> str:
    """The remote text: a header with the shell's pid (cockpit's own process), then ``tail -F``."""
    p = path if not path.startswith("-") else "./" + path
    tool = f"tail -c +{max(0, int(offset)) + 1} -F -- {shlex.quote(p)} 2>/dev/null"
    return wrap(LOG_MARK, f"echo \"{LOG_MARK} wait $$\"; ", tool)


class LogWaker:
    """Arms ``tail -F`` through ``open_chunks`` (the transport's stream inside the target)."""

    def __init__(self, open_chunks: Callable[[str], AsyncIterator[bytes]]) -> None:
        self._open = open_chunks
        #: ``ready`` until a tail failed by itself (then ``unsupported``: poll)
        self.state = "ready"
        #: the waiting shell's pid in the target while armed (cockpit's own process)
        self.shell_pid: int | None = None
        self.wakes = 0
        self.arms = 0
        self.last_error: str | None = None

    @property
    def usable(self) -> bool:
        return self.state == "ready"

    async def wait(self, path: str, offset: int, timeout: float) -> str:
        """Until the log at ``path`` has bytes past ``offset`` (``changed``), or ``timeout`` s pass
        with ``tail -F`` watching (``quiet``); ``error`` when it could not watch (the stream failed
        or ended: nothing is known, poll)."""
        if not self.usable:
            return "error"
        self.arms += 1
        try:
            return "changed" if await asyncio.wait_for(self._first_byte(path, offset), timeout) else "error"
        except (asyncio.TimeoutError, TimeoutError):
            return "quiet"
        finally:
            self.shell_pid = None

    async def _first_byte(self, path: str, offset: int) -> bool:
        # raw chunks, not lines: a progress bar's partial line (no newline yet) is a change too
        chunks = self._open(waker_command(path, offset))
        exit_word = f"{LOG_MARK} exit ".encode()
        t0 = time.monotonic()
        buf, header = b"", False
        try:
            async for chunk in chunks:
                buf += chunk
                if not header:
                    nl = buf.find(b"\n")
                    if nl < 0:
                        continue
                    pid = buf[:nl].split()[-1:]
                    self.shell_pid = int(pid[0]) if pid and pid[0].isdigit() else None
                    header, buf = True, buf[nl + 1:]
                if not buf:
                    continue
                if exit_word.startswith(buf[:len(exit_word)]) and (len(buf) < len(exit_word) or b"\n" not in buf):
                    continue  # (the start of) the wrapper's exit line: wait for all of it
                if buf.startswith(exit_word):
                    code = buf[len(exit_word):].split(b"\n")[0].strip()
                    if code.isdigit() and failed_by_itself(int(code)):
                        self.state, self.last_error = "unsupported", f"tail -F exited with status {code.decode()}"
                        log.info("the log waker cannot run here (%s): the log is polled", self.last_error)
                    break
                self.wakes += 1
                return True
        except RemoteError as e:
            self.last_error = e.message
        except OSError as e:
            self.last_error = repr(e)
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        # the stream ended without a byte (a dropped channel): do not spin on it
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
        return False
