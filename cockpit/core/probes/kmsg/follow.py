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

import shlex
from collections import deque
from collections.abc import AsyncIterator, Callable

from ...remote.follow import StreamFollower, wrap
from .command import MARK

__all__ = ["KmsgFollower", "follow_command", "KEEP"]

#: kernel lines kept (the poll reads as many)
KEEP = 3000


def follow_command(dmesg: str = "dmesg") -> str:
    """The host-side stream: the boot time and the source first (as :func:`.command.kmsg_command`
    prints them), then ``dmesg --follow`` until it dies or the channel's stdin closes (:func:`wrap`)."""
    prelude = (
        "_ck_b=; while read -r _ck_k _ck_v; do [ \"$_ck_k\" = btime ] && { _ck_b=$_ck_v; break; }; "
        f"done </proc/stat 2>/dev/null; echo \"{MARK} btime $_ck_b\"; echo '{MARK} dmesg-iso'; "
    )
    return wrap(MARK, prelude, f"{shlex.quote(dmesg)} --follow --time-format iso 2>/dev/null")


class KmsgFollower(StreamFollower):
    """Keeps one ``dmesg --follow`` running through ``open_lines`` (the transport's host stream)."""

    name = "kernel-log"
    tool = "dmesg"

    def __init__(self, open_lines: Callable[[str], AsyncIterator[bytes]], *, command: str | None = None, keep: int = KEEP) -> None:
        super().__init__(open_lines, command or follow_command(), mark=MARK, header_lines=2)
        self.lines: deque[str] = deque(maxlen=keep)

    def text(self) -> str:
        return "\n".join([*self.header, *self.lines]) + "\n"

    def on_up(self) -> None:
        self.lines.clear()  # the ring buffer's dump follows at once

    def on_line(self, line: str) -> bool:
        self.lines.append(line)
        return True

    def what(self) -> str:
        return "the kernel-log stream"
