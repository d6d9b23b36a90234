"""The remote-access interface every transport implements.

A *transport* reaches one target.  It offers three ways to run things:

``run(cmd)``
    a short command **inside the target** (the container for ``runtime = "pct"``, the host
    otherwise), through the persistent framed session: about a millisecond per call.
``run_host(cmd)``
    a command on the host itself (``pct status``, ``dmesg``), on its own channel.
``stream(cmd)``
    a long-running command on its own channel, yielding output chunks as they come.

All of them take ``timeout`` (seconds) and return a :class:`CommandResult`; failures to even run
the command raise :class:`RemoteError`, which carries the :class:`Layer` it belongs to and a
message a person can act on.  A non-zero exit code of the command itself is *not* an error: it
comes back in the result.
"""

from __future__ import annotations

import abc
import shlex
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..layers import Evidence, Layer, tail
from .lines import capped_lines

if TYPE_CHECKING:  # pragma: no cover - the runtimes build on the transports
    from ..runtimes.base import Runtime

__all__ = ["CommandResult", "RemoteError", "Transport"]


@dataclass
class CommandResult:
    command: str
    exit_code: int
    stdout: bytes = b""
    stderr: bytes = b""
    duration_s: float = 0.0
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def err_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    def evidence(self, limit: int = 2000) -> Evidence:
        out = self.stdout + (b"\n" if self.stdout and self.stderr else b"") + self.stderr
        return Evidence(command=self.command, exit_code=self.exit_code, output=tail(out, limit))


class RemoteError(Exception):
    """Running something remotely failed below the command itself."""

    def __init__(self, layer: Layer, message: str, *, hint: str = "", command: str = "", output: str = ""):
        super().__init__(message)
        self.layer = layer
        self.message = message
        self.hint = hint
        self.command = command
        self.output = output
        self.at = time.time()

    def evidence(self) -> Evidence:
        return Evidence(command=self.command, exit_code=None, output=self.output or self.message)

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


async def _no_host_stream(where: str) -> AsyncIterator[bytes]:
    raise RemoteError(Layer.HOST, f"{where}: this transport cannot stream host commands")
    yield b""  # pragma: no cover - makes this an async generator


@dataclass
class LinkState:
    """What a transport knows about its own health, per layer, for the status line."""

    layer_ok: dict[str, bool | None] = field(default_factory=dict)
    last_error: str = ""
    reconnects: int = 0


class Transport(abc.ABC):
    """One target.  Implementations: :class:`~.ssh.SSHTransport`, :class:`~.local.LocalTransport`."""

    #: short human description: "root@10.1.2.6 pct 200"
    description: str = ""
    #: how commands get inside the target (set by each implementation's ``__init__``)
    runtime: Runtime

    @property
    def connects(self) -> int:
        """Connections made to the target so far: it grows each time a lost link is rebuilt (0 without one)."""
        return 0

    @abc.abstractmethod
    async def run(self, command: str, *, timeout: float = 10.0, cheap: bool = False) -> CommandResult:
        """Run a short shell command inside the target through the persistent session; ``cheap``
        for one that cannot hang: no watchdog forked, see :meth:`.session.FramedSession.run`."""

    async def run_many(self, commands: list[str], *, timeout: float = 10.0, cheap: bool | Sequence[bool] = False) -> list[CommandResult]:
        """Several independent short commands inside the target: one round trip through the
        persistent session where there is one (:meth:`.session.FramedSession.run_many`: the frames
        written in one go, answered in order), else one after the other.  ``cheap``: for all of
        them, or one flag per command."""
        session = getattr(self, "session", None)
        many = getattr(session, "run_many", None)
        if many is not None:
            return list(await many(commands, timeout=timeout, cheap=cheap))
        flags = [cheap] * len(commands) if isinstance(cheap, bool) else list(cheap)
        return [await self.run(c, timeout=timeout, cheap=f) for c, f in zip(commands, flags, strict=True)]

    @abc.abstractmethod
    async def run_host(self, command: str, *, timeout: float = 10.0, input: bytes | None = None) -> CommandResult:
        """Run a shell command on the host (outside any container), on its own channel."""

    @abc.abstractmethod
    def stream(self, command: str, *, timeout: float | None = None) -> AsyncIterator[bytes]:
        """Run a long command inside the target on its own channel, yielding stdout chunks."""

    def stream_host(self, command: str, *, timeout: float | None = None) -> AsyncIterator[bytes]:
        """Run a long command on the host (outside any container) on its own channel, yielding
        stdout chunks.  Transports that cannot raise :class:`RemoteError` when iterated."""
        return _no_host_stream(self.description)

    def stream_lines(self, command: str, *, timeout: float | None = None) -> AsyncIterator[bytes]:
        """:meth:`stream` as lines, each capped at :data:`~.lines.LINE_MAX` with a visible mark."""
        return capped_lines(self.stream(command, timeout=timeout))

    @abc.abstractmethod
    async def run_channel(self, command: str, *, timeout: float = 60.0, input: bytes | None = None) -> CommandResult:
        """Run a shell command inside the target on its own channel, ``input`` on its stdin (uploads)."""

    async def put_bytes(self, path: str, data: bytes, *, mode: int = 0o644, timeout: float = 60.0) -> None:
        """Write ``data`` to ``path`` inside the target atomically (a temp file, then ``mv``)."""
        q = shlex.quote(path)
        res = await self.run_channel(f"cat > {q}.cockpit-tmp && chmod {mode:o} {q}.cockpit-tmp && mv -f {q}.cockpit-tmp {q}", timeout=timeout, input=data)
        if not res.ok:
            raise RemoteError(Layer.CONTAINER, f"could not write {path}: {res.err_text.strip()}", command=res.command, output=res.err_text)

    async def connect(self, *, force: bool = False) -> object:
        """Open the connection (also done lazily by ``run``); ``force`` ignores any reconnect backoff."""
        return None

    async def reset_session(self) -> None:  # noqa: B027 - optional: a transport without a persistent session has nothing to throw away
        """Throw the persistent session away; the next ``run`` builds a new one."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close everything."""

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
