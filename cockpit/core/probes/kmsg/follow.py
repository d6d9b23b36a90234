"""The host's kernel log as one long-lived stream: ``dmesg --follow`` on its own channel.

Polling ``dmesg`` opens a new SSH channel every refresh (about 90 ms against OpenSSH); one
``dmesg --follow --time-format iso`` on the host keeps the newest :data:`KEEP` lines in memory and a
refresh only parses them (nothing runs remotely).  When the stream dies it is restarted with a
capped backoff (1 s, doubling, 60 s at most) and the death is kept (``last_death``, its layer);
meanwhile, and wherever following never worked (busybox ``dmesg``, no permission: dmesg exits with a
failure status before a single kernel line; the stream's last line says how it ended), the observer
polls as before.  ``state`` says which:
``starting``, ``following``, ``restarting`` or ``unsupported``.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

from ...layers import Layer
from ...remote.base import RemoteError
from .command import MARK

__all__ = ["KmsgFollower", "follow_command", "KEEP"]

log = logging.getLogger(__name__)

#: kernel lines kept (the poll reads as many)
KEEP = 3000
BACKOFF_MAX_S = 60.0


def follow_command(dmesg: str = "dmesg") -> str:
    """The host-side stream: the boot time and the source first (as :func:`.command.kmsg_command`
    prints them), then ``dmesg --follow`` until it dies or the channel's stdin closes."""
    return (
        "_ck_b=; while read -r _ck_k _ck_v; do [ \"$_ck_k\" = btime ] && { _ck_b=$_ck_v; break; }; "
        f"done </proc/stat 2>/dev/null; echo \"{MARK} btime $_ck_b\"; echo '{MARK} dmesg-iso'; "
        # dmesg blocked on the ring buffer would outlive a closed channel: it ends when stdin does
        # (a POSIX sh such as dash gives a background list /dev/null as stdin: the watcher reads
        # the channel's stdin through fd 3, saved before)
        "exec 3<&0; "
        f"{shlex.quote(dmesg)} --follow --time-format iso 2>/dev/null </dev/null 3<&- & _ck_p=$!; "
        "{ read -r _ck_x; kill $_ck_p; } <&3 3<&- 2>/dev/null & exec 3<&-; wait $_ck_p; "
        # how dmesg ended: a failure exit with no line is "cannot follow"; a signal is a death
        f"echo \"{MARK} exit $?\""
    )


class KmsgFollower:
    """Keeps one ``dmesg --follow`` running through ``open_lines`` (the transport's host stream)."""

    def __init__(self, open_lines: Callable[[str], AsyncIterator[bytes]], *, command: str | None = None, keep: int = KEEP) -> None:
        self._open = open_lines
        self.command = command or follow_command()
        self.header: list[str] = []
        self.lines: deque[str] = deque(maxlen=keep)
        self.state = "starting"
        self.version = 0  # grows with every line received: the reader re-parses only on change
        self.starts = 0
        self.deaths = 0
        self.last_death: str | None = None
        self.last_death_layer: Layer | None = None
        self.ever_followed = False
        self._task: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        return self.state == "following"

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="kmsg-follow")

    def text(self) -> str:
        return "\n".join([*self.header, *self.lines]) + "\n"

    async def _run(self) -> None:
        delay = 1.0
        while True:
            self.starts += 1
            got = 0
            exit_code: int | None = None
            reason, layer = "the kernel-log stream ended", Layer.HOST
            try:
                self.header, fresh = [], []
                async for raw in self._open(self.command):
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if line.startswith(MARK + " exit "):
                        exit_code = _int(line[len(MARK) + 6:])
                        continue
                    if line.startswith(MARK):
                        self.header.append(line)
                        if len(self.header) == 2:  # the stream is up: the ring buffer dump follows at once
                            self.lines.clear()
                            self.state = "following"
                        continue
                    fresh.append(line)
                    got += 1
                    self.lines.append(line)
                    self.version += 1
                    self.ever_followed = True
                    delay = 1.0
            except RemoteError as e:
                reason, layer = e.message, e.layer
            except (OSError, asyncio.TimeoutError, TimeoutError) as e:
                reason = f"the kernel-log stream failed: {e!r}"
            if exit_code is not None:
                reason = f"{reason} (dmesg exit status {exit_code})"
            self.deaths += 1
            self.last_death, self.last_death_layer = reason, layer
            # Only dmesg failing by itself (an exit status 1..127 before any kernel line: busybox,
            # no permission), or a channel that never opened (sshd refusing it: MaxSessions), means
            # it cannot follow here.  A dmesg killed by a signal (status > 128), or a stream that
            # was up and dropped before dmesg printed its first line (a loaded host), is a death.
            never_opened = not self.header and exit_code is None
            failed_itself = exit_code is not None and 0 < exit_code < 128
            if not self.ever_followed and got == 0 and (failed_itself or never_opened):
                self.state = "unsupported"  # busybox dmesg, no permission: polling it is
                log.info("dmesg --follow gave nothing (%s): kernel messages are polled", reason)
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


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None
