"""One long-lived remote command kept running: the base of every stream that replaces a poll.

Polling re-spawns a command every tick (a fork or three remotely, a round trip, sometimes a new
SSH channel); a tool that can print as things happen (``dmesg --follow``, ``nvidia-smi … -lms N``,
a log follower) runs once, on its own channel, and a refresh only reads what it kept.

The remote side is a small ``sh`` wrapper (see :func:`wrap`): it prints header lines first (each
starting with the stream's ``mark``; the stream is *up* once ``header_lines`` of them came), then
the tool's output, and at the end ``MARK exit N`` with the tool's exit status.  The tool is ended
when the channel's stdin closes (cockpit went away, or closed the stream), so it never outlives
its channel, even where sshd does not signal the session's processes.

:class:`StreamFollower` restarts a dead stream with a capped backoff (1 s, doubling, 60 s at most)
and keeps the death (``last_death``, its layer) for the status line.  A tool that fails *by
itself* before its first data line (an exit status 1..127: busybox's dmesg, a driver without the
option, no permission), or a channel that never opened (sshd refusing it), means streaming does
not work here: ``state`` becomes ``unsupported`` and the caller polls as before.  A tool killed
by a signal (status above 128), or a stream that was up and dropped, is a death: restarted.
``state`` is one of ``starting``, ``following``, ``restarting``, ``unsupported``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable

from ..layers import Layer
from .base import RemoteError

__all__ = ["StreamFollower", "wrap", "failed_by_itself", "BACKOFF_MAX_S"]

log = logging.getLogger(__name__)

BACKOFF_MAX_S = 60.0


def wrap(mark: str, prelude: str, tool: str) -> str:
    """The remote ``sh`` text: ``prelude`` (prints the header lines), then ``tool`` in the background
    until it ends or the channel's stdin closes, then ``MARK exit N``.

    A POSIX ``sh`` such as dash gives a background list ``/dev/null`` as its stdin: the watcher
    reads the channel's stdin through fd 3, saved before.  ``tool`` gets ``</dev/null``; its
    stderr is the caller's business (``2>&1`` to see a failure's text, ``2>/dev/null`` to drop it).
    """
    return (
        f"{prelude}exec 3<&0; "
        f"{tool} </dev/null 3<&- & _ck_p=$!; "
        "{ read -r _ck_x; kill $_ck_p; } <&3 3<&- 2>/dev/null & exec 3<&-; wait $_ck_p; "
        f"echo \"{mark} exit $?\""
    )


class StreamFollower:
    """Keeps one remote stream running through ``open_lines`` (a transport's line stream).

    Subclasses say what a line means: :meth:`on_up` when the header is complete, :meth:`on_line`
    for each data line (returns False for a line that is not data: it does not count as the
    tool having worked).
    """

    #: a name for the task and the log
    name = "stream"
    #: the tool's name, in the death's text (``dmesg exit status 1``)
    tool = "the tool's"

    def __init__(self, open_lines: Callable[[str], AsyncIterator[bytes]], command: str, *, mark: str, header_lines: int) -> None:
        self._open = open_lines
        self.command = command
        self.mark = mark
        self.header_lines = header_lines
        self.header: list[str] = []
        self.state = "starting"
        self.version = 0  # grows with every data line: a reader re-parses only on change
        self.starts = 0
        self.deaths = 0
        self.last_death: str | None = None
        self.last_death_layer: Layer | None = None
        self.ever_followed = False
        self.restart_at: float | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        return self.state == "following"

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"{self.name}-follow")

    # -- what subclasses say ------------------------------------------------------------------
    def on_up(self) -> None:
        """The header is complete: the tool's output follows."""

    def on_line(self, line: str) -> bool:
        """One line of the tool's output; False when it is not data."""
        return True

    def what(self) -> str:
        """What the stream is, for messages (``the kernel-log stream``)."""
        return f"the {self.name} stream"

    # -- the loop -------------------------------------------------------------------------------
    async def _run(self) -> None:
        delay = 1.0
        exit_word = self.mark + " exit "
        while True:
            self.starts += 1
            got = 0
            exit_code: int | None = None
            reason, layer = f"{self.what()} ended", Layer.HOST
            try:
                self.header = []
                # closed in `finally`: a cancelled follower closes its channel (ends the tool) at
                # once, not whenever the generator is collected (after the event loop is gone, say)
                lines = self._open(self.command)
                try:
                    async for raw in lines:
                        line = raw.decode("utf-8", "replace").rstrip("\r\n")
                        if line.startswith(exit_word):
                            exit_code = _int(line[len(exit_word):])
                            continue
                        if line.startswith(self.mark) and len(self.header) < self.header_lines:
                            self.header.append(line)
                            if len(self.header) == self.header_lines:
                                self.state = "following"
                                self.on_up()
                            continue
                        if self.on_line(line):
                            got += 1
                            self.version += 1
                            self.ever_followed = True
                            delay = 1.0
                finally:
                    aclose = getattr(lines, "aclose", None)
                    if aclose is not None:
                        await aclose()
            except RemoteError as e:
                reason, layer = e.message, e.layer
            except (OSError, asyncio.TimeoutError, TimeoutError) as e:
                reason = f"{self.what()} failed: {e!r}"
            if exit_code is not None:
                reason = f"{reason} ({self.tool} exit status {exit_code})"
            self.deaths += 1
            self.last_death, self.last_death_layer = reason, layer
            never_opened = not self.header and exit_code is None
            if not self.ever_followed and got == 0 and (failed_by_itself(exit_code) or never_opened):
                self.state = "unsupported"
                log.info("%s gave nothing (%s): polled instead", self.what(), reason)
                return
            self.state = "restarting"
            self.restart_at = time.time() + delay
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


def failed_by_itself(exit_code: int | None) -> bool:
    """A tool's exit status that means "it cannot run here" (1..127: busybox without the option,
    no permission), as opposed to a signal (above 128: killed, a death) or success."""
    return exit_code is not None and 0 < exit_code < 128


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None
