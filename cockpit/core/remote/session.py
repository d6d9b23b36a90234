"""The persistent framed shell session.

One long-lived ``sh`` inside the target (``pct exec CTID -- /bin/sh`` on one SSH channel, or a
plain ``/bin/sh`` on the host) runs many short commands.  Starting a fresh ``ssh host pct exec``
per probe costs hundreds of milliseconds (handshake, then ``pct`` is a slow-starting Perl
program); a command through an open session costs about a millisecond.

Framing
-------
Each command runs in its own ``sh -c`` (so no state leaks from one probe to the next) with its
stdout and stderr captured into files in a private per-session directory, under ``timeout`` so a
hung command is killed remotely (its whole process group).  The session then prints one header
line and the raw bytes::

    @@cockpit <id> <exit code> <stdout length> <stderr length>\\n<stdout bytes><stderr bytes>

Because the payload is length-prefixed, output without a trailing newline, binary output, or
output that itself contains ``@@cockpit`` comes back intact: nothing in the payload is ever
scanned for a sentinel.  The session's own stdout carries nothing but frames.

Only one command is in flight at a time (an ``asyncio.Lock``); probes are short, so 50
concurrent callers simply queue.  A command that exceeds its timeout is killed remotely by
``timeout`` and reported with ``timed_out=True``; the session stays usable.  If the remote
``timeout`` itself fails to answer within a grace period, the session is declared dead, torn
down and rebuilt on the next call.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import shlex
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from ..layers import Layer
from .base import CommandResult, RemoteError

__all__ = ["FramedSession", "SessionProcess", "classify_start_failure"]

_HEADER = re.compile(rb"^@@cockpit (\d+) (-?\d+) (\d+) (\d+)$")
_READY = b"@@cockpit-ready"
#: extra seconds the client waits beyond a command's own timeout before declaring the session dead
GRACE_S = 3.0

_BOOTSTRAP = (
    # private scratch dir for captured output; the session's stdout carries only frames
    "umask 077; "
    "d=$(mktemp -d /tmp/.cockpit-s.XXXXXX 2>/dev/null) || { d=/tmp/.cockpit-s.$$; mkdir -p \"$d\"; }; "
    "trap 'rm -rf \"$d\"' EXIT; "
    "if command -v timeout >/dev/null 2>&1; then t=timeout; else t=; fi; "
    "printf '%s %s %s\\n' '@@cockpit-ready' \"$d\" \"${t:-none}\"\n"
)


class SessionProcess(Protocol):
    """What the session needs from a running ``sh``: asyncssh's process and asyncio's both fit."""

    async def write(self, data: bytes) -> None: ...
    async def readline(self) -> bytes: ...
    async def readexactly(self, n: int) -> bytes: ...
    def stderr_tail(self) -> bytes: ...
    def closed(self) -> bool: ...
    async def wait_closed(self) -> None: ...
    async def exit_status(self, timeout: float) -> int | None: ...
    def close(self) -> None: ...


def classify_start_failure(exit_code: int | None, stderr: str, *, runtime: str) -> tuple[Layer, str, str]:
    """Map why a shell inside the target could not start (or died) onto a layer, message, hint."""
    text = stderr.strip()
    low = text.lower()
    if "does not exist" in low and "configuration file" in low:
        return (Layer.HOST, f"container missing: {text}", "check [target] container; `pct list` on the host shows the ids")
    if "not running" in low:
        return (Layer.HOST, f"container not running: {text}", "start it (`pct start ID`) or reboot it from cockpit")
    if "command not found" in low and "pct" in low or (runtime == "pct" and exit_code == 127 and "pct" in low):
        return (Layer.HOST, f"pct not found on the host: {text}", "is this a Proxmox host? set [target] runtime = \"none\" for a plain host")
    if exit_code in (126, 127):
        return (Layer.CONTAINER, f"no usable /bin/sh inside the target (exit {exit_code}): {text}", "the container image needs a POSIX shell")
    where = "container" if runtime == "pct" else "host"
    msg = f"the {where} shell exited (exit {exit_code})" + (f": {text}" if text else "")
    return (Layer.CONTAINER if runtime == "pct" else Layer.HOST, msg, "it was killed or the container stopped; cockpit rebuilds it on the next command")


class FramedSession:
    """Runs short commands through one long-lived shell.  See the module docstring."""

    def __init__(
        self,
        spawn: Callable[[], Awaitable[SessionProcess]],
        *,
        runtime: str = "none",
        description: str = "",
        lost_layer: Callable[[], Layer | None] | None = None,
    ) -> None:
        self._spawn = spawn
        self._runtime = runtime
        self._description = description
        self._lost_layer = lost_layer
        self._proc: SessionProcess | None = None
        self._lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self.has_timeout = True
        self.scratch = ""
        self.started_at: float | None = None
        self.rebuilds = 0
        self.last_error: RemoteError | None = None

    @property
    def alive(self) -> bool:
        return self._proc is not None

    async def start(self, timeout: float = 15.0) -> None:
        async with self._lock:
            await self._ensure(timeout)

    async def _ensure(self, timeout: float) -> SessionProcess:
        if self._proc is not None and self._proc.closed():
            # died while idle (killed from outside, container stopped): say so, then rebuild
            await self._died(self._proc, EOFError("session closed while idle"))
        if self._proc is not None:
            return self._proc
        proc = await self._spawn()
        try:
            await asyncio.wait_for(proc.write(_BOOTSTRAP.encode()), timeout)
            line = await asyncio.wait_for(proc.readline(), timeout)
        except (asyncio.TimeoutError, TimeoutError):
            proc.close()
            await proc.wait_closed()
            raise self._fail(None, proc, f"the target shell did not answer within {timeout:g}s",
                             Layer.CONTAINER if self._runtime == "pct" else Layer.HOST) from None
        except (OSError, EOFError, asyncio.IncompleteReadError, ConnectionError) as e:
            line = b""
            _ = e
        if not line.startswith(_READY):
            code = await proc.exit_status(2.0)
            proc.close()
            await proc.wait_closed()
            layer, msg, hint = classify_start_failure(code, proc.stderr_tail().decode("utf-8", "replace"), runtime=self._runtime)
            lost = self._lost_layer() if self._lost_layer else None
            if lost is not None:
                layer, msg, hint = lost, "the SSH connection was lost while starting the session", "cockpit reconnects with backoff"
            err = RemoteError(layer, msg, hint=hint, output=proc.stderr_tail().decode("utf-8", "replace"))
            self.last_error = err
            raise err
        parts = line.split()
        self.scratch = parts[1].decode() if len(parts) > 1 else ""
        self.has_timeout = len(parts) > 2 and parts[2] != b"none"
        self._proc = proc
        self.started_at = time.time()
        return proc

    def _fail(self, code: int | None, proc: SessionProcess, msg: str, layer: Layer) -> RemoteError:
        err = RemoteError(layer, msg, output=proc.stderr_tail().decode("utf-8", "replace"))
        self.last_error = err
        return err

    def _frame(self, ident: int, command: str, timeout: float) -> bytes:
        secs = max(0.1, timeout)
        inner = f"sh -c {shlex.quote(command)}"
        if self.has_timeout:
            inner = f"timeout -k 1 {secs:g} {inner}"
        return (
            f"{inner} </dev/null >\"$d/o\" 2>\"$d/e\"; r=$?; "
            f"printf '@@cockpit %s %s %s %s\\n' {ident} \"$r\" $(wc -c <\"$d/o\") $(wc -c <\"$d/e\"); "
            f"cat \"$d/o\" \"$d/e\"\n"
        ).encode()

    async def run(self, command: str, *, timeout: float = 10.0) -> CommandResult:
        """Run ``command`` with ``sh -c`` inside the target; see the module docstring."""
        async with self._lock:
            proc = await self._ensure(max(timeout, 5.0))
            ident = next(self._ids)
            t0 = time.monotonic()
            try:
                await proc.write(self._frame(ident, command, timeout))
                header = await asyncio.wait_for(self._read_header(proc, ident), timeout + GRACE_S)
                code, olen, elen = header
                payload = await asyncio.wait_for(proc.readexactly(olen + elen), timeout + GRACE_S)
            except (asyncio.TimeoutError, TimeoutError):
                await self._kill()
                return CommandResult(command, 124, b"", b"cockpit: the session did not answer; it was rebuilt", time.monotonic() - t0, timed_out=True)
            except (OSError, EOFError, asyncio.IncompleteReadError, ConnectionError, BrokenPipeError) as e:
                raise await self._died(proc, e) from e
            dt = time.monotonic() - t0
            timed_out = code in (124, 137) and dt >= timeout * 0.95
            return CommandResult(command, code, payload[:olen], payload[olen:], dt, timed_out=timed_out)

    async def _read_header(self, proc: SessionProcess, ident: int) -> tuple[int, int, int]:
        while True:
            line = await proc.readline()
            if not line:
                raise EOFError("session closed")
            m = _HEADER.match(line.rstrip(b"\r\n"))
            if m and int(m.group(1)) == ident:
                return int(m.group(2)), int(m.group(3)), int(m.group(4))
            # anything else is noise from a previous, abandoned frame or a startup message: skip

    async def _died(self, proc: SessionProcess, exc: BaseException) -> RemoteError:
        code = await proc.exit_status(2.0)
        stderr = proc.stderr_tail().decode("utf-8", "replace")
        await self._kill()
        lost = self._lost_layer() if self._lost_layer else None
        if lost is not None:
            err = RemoteError(lost, "the SSH connection was lost during a command", hint="cockpit reconnects with backoff", output=stderr)
        else:
            layer, msg, hint = classify_start_failure(code, stderr, runtime=self._runtime)
            err = RemoteError(layer, msg, hint=hint, output=stderr)
        self.last_error = err
        self.rebuilds += 1
        return err

    async def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.close()
            await proc.wait_closed()

    async def close(self) -> None:
        await self._kill()
