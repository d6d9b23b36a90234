"""The persistent framed shell session.

One long-lived ``sh`` inside the target (``pct exec CTID -- /bin/sh`` on one SSH channel, or a
plain ``/bin/sh`` on the host) runs many short commands.  Starting a fresh ``ssh host pct exec``
per probe costs hundreds of milliseconds (handshake, then ``pct`` is a slow-starting Perl
program); a command through an open session costs about a millisecond.

Framing
-------
Each command runs in its own ``sh -c`` (so no state leaks from one probe to the next) with its
stdout and stderr captured into files in a private per-session directory, under ``timeout`` so a
hung command is killed remotely (its whole process group).  The session first says it starts the
command, then prints one header line and the raw bytes::

    @@cockpit-go <id>\\n
    @@cockpit <id> <exit code> <stdout length> <stderr length>\\n<stdout bytes><stderr bytes>

Because the payload is length-prefixed, output without a trailing newline, binary output, or
output that itself contains ``@@cockpit`` comes back intact: nothing in the payload is ever
scanned for a sentinel.  The session's own stdout carries nothing but frames.  Lighter frames for
commands that cannot hang (``cheap``: a subshell, one fork; ``inline``: in the session shell
itself, no fork) and where each microsecond of a frame goes are in :mod:`.frames`.

Pipelined: :meth:`FramedSession.run_many` writes several frames at once and reads their answers
in order, one round trip for all (10 inline probes: ~0.2 ms each against ~0.6 ms for a bare
``echo`` round trip); each frame keeps its own id, exit code, lengths and deadline.

Bounded: at most :data:`OUTPUT_MAX` bytes of each of stdout and stderr are sent (``head -c``; the
header keeps the real length and a mark says what was left out), and every line is capped at
:data:`~.lines.LINE_MAX` (:mod:`.lines`): a command that prints 50 MiB without a newline costs
about 2 MiB of memory, no exception, and the next command runs as usual.

Safe to retry: a shell that died *before* it said ``@@cockpit-go`` (killed while idle, from
outside) never started the command, so the command is run once more on a new shell, and the caller
sees nothing but the answer.  A shell that died after it is a :class:`RemoteError`: the command
may have run, and running it twice (a launch) is the one thing never to do.

Only one command is in flight at a time (an ``asyncio.Lock``); probes are short, so 50
concurrent callers simply queue.  A command that exceeds its timeout is killed remotely by
``timeout`` and reported with ``timed_out=True``; the session stays usable.  If the remote
``timeout`` itself fails to answer within a grace period, the session is declared dead, torn
down and rebuilt on the next call.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from ..layers import Layer
from .base import CommandResult, RemoteError
from .frames import BOOTSTRAP, GO, HEADER, INLINE_MAX, READY, Mode, frame, stderr_cut_by_shell, stdout_cut_by_shell
from .lines import OUTPUT_MAX, ChunkedReader, LineCapper
from .startfail import StartWords, classify_start_failure

__all__ = ["FramedSession", "SessionProcess", "classify_start_failure", "OUTPUT_MAX"]

#: extra seconds the client waits beyond a command's own timeout before declaring the session dead
GRACE_S = 3.0
#: what the session reads while it skips noise (a startup message) to the next line it expects
_NOISE_LINE = 4096

T = TypeVar("T")

if sys.version_info >= (3, 11):
    async def _within(aw: Awaitable[T], limit: float) -> T:
        """``aw`` under a deadline, without the task ``wait_for`` creates on 3.11."""
        async with asyncio.timeout(limit):
            return await aw
else:  # pragma: no cover - 3.10
    async def _within(aw: Awaitable[T], limit: float) -> T:
        return await asyncio.wait_for(aw, limit)


class SessionProcess(Protocol):
    """What the session needs from a running ``sh``: asyncssh's process and asyncio's both fit."""

    async def write(self, data: bytes) -> None: ...
    async def read(self, n: int) -> bytes: ...
    def stderr_tail(self) -> bytes: ...
    def closed(self) -> bool: ...
    async def wait_closed(self) -> None: ...
    async def exit_status(self, timeout: float) -> int | None: ...
    def close(self) -> None: ...


class _Shell:
    """One started shell: its process, a capped reader of its stdout, what the bootstrap told."""

    def __init__(self, proc: SessionProcess) -> None:
        self.proc = proc
        self.reader = ChunkedReader(proc.read)
        self.capped = False  # the shell sends at most OUTPUT_MAX bytes per stream


class FramedSession:
    """Runs short commands through one long-lived shell.  See the module docstring."""

    def __init__(
        self,
        spawn: Callable[[], Awaitable[SessionProcess]],
        *,
        words: StartWords | None = None,
        description: str = "",
        lost_layer: Callable[[], Layer | None] | None = None,
    ) -> None:
        self._spawn = spawn
        #: how a start failure reads for the runtime (a host shell's by default)
        self._words = words or StartWords()
        self._description = description
        self._lost_layer = lost_layer
        self._sh: _Shell | None = None
        self._lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self.has_timeout = True
        #: the shell counts ``${#var}`` in bytes, so cheap frames can send a variable (see ``run``)
        self.bytes_len = False
        #: the session shell's pid as the target sees it (cockpit's own processes descend from it)
        self.shell_pid: int | None = None
        self.scratch = ""
        self.started_at: float | None = None
        #: shells that died under cockpit (each one rebuilt on the next command)
        self.rebuilds = 0
        #: commands run again on a new shell because the old one died before starting them
        self.retries = 0
        self.last_error: RemoteError | None = None

    @property
    def alive(self) -> bool:
        return self._sh is not None

    @property
    def _proc(self) -> SessionProcess | None:
        return self._sh.proc if self._sh is not None else None

    def closed(self) -> bool:
        """True when no shell is up, or the one up has ended (noticed before the next command)."""
        return self._sh is None or self._sh.proc.closed()

    async def start(self, timeout: float = 15.0) -> None:
        async with self._lock:
            await self._ensure(timeout)

    async def _ensure(self, timeout: float) -> _Shell:
        if self._sh is not None and self._sh.proc.closed():
            # died while idle: the shell alone (killed from outside, container stopped) is rebuilt at
            # once; a lost connection is said first (the ssh layer shows it; the next call reconnects)
            err = await self._died(self._sh.proc, EOFError("session closed while idle"))
            if err.layer is Layer.SSH:
                raise err
        if self._sh is not None:
            return self._sh
        proc = await self._spawn()
        try:
            sh = await self._bootstrap(proc, timeout)
        except BaseException:
            proc.close()  # a shell that did not start, or whose start was cancelled, is nobody's: its channel goes now
            raise
        self._sh = sh
        self.started_at = time.time()
        return sh

    async def _bootstrap(self, proc: SessionProcess, timeout: float) -> _Shell:
        """Start the framing in a new shell and read what it says of itself."""
        sh = _Shell(proc)
        try:
            # under _within, not wait_for: Python 3.11's wait_for swallows a cancellation that comes
            # as its awaitable ends, and a start cancelled so would go on as if it had not been
            await _within(proc.write(BOOTSTRAP.encode()), timeout)
            line = await _within(sh.reader.readline(_NOISE_LINE), timeout)
        except (asyncio.TimeoutError, TimeoutError):
            proc.close()
            await proc.wait_closed()
            raise self._fail(proc, f"the target shell did not answer within {timeout:g}s",
                             Layer.CONTAINER if self._words.inside else Layer.HOST) from None
        except (OSError, EOFError, ConnectionError):
            line = b""
        if not line.startswith(READY):
            code = await proc.exit_status(2.0)
            proc.close()
            await proc.wait_closed()
            layer, msg, hint = classify_start_failure(code, proc.stderr_tail().decode("utf-8", "replace"), runtime=self._words)
            lost = self._lost_layer() if self._lost_layer else None
            if lost is not None:
                layer, msg, hint = lost, "the SSH connection was lost while starting the session", "cockpit reconnects with backoff"
            err = RemoteError(layer, msg, hint=hint, output=proc.stderr_tail().decode("utf-8", "replace"))
            self.last_error = err
            raise err
        parts = line.split()
        self.scratch = parts[1].decode() if len(parts) > 1 else ""
        self.has_timeout = len(parts) > 2 and parts[2] != b"none"
        sh.capped = len(parts) > 3 and parts[3] == b"head"
        self.shell_pid = int(parts[4]) if len(parts) > 4 and parts[4].isdigit() else None
        self.bytes_len = len(parts) > 5 and parts[5] == b"1"
        return sh

    def _fail(self, proc: SessionProcess, msg: str, layer: Layer) -> RemoteError:
        err = RemoteError(layer, msg, output=proc.stderr_tail().decode("utf-8", "replace"))
        self.last_error = err
        return err

    async def run(self, command: str, *, timeout: float = 10.0, cheap: bool = False, inline: bool = False) -> CommandResult:
        """Run ``command`` inside the target; see the module docstring and :mod:`.frames`.

        ``cheap=True`` is for commands that cannot hang (shell built-ins, reads of ``/proc``, or a
        command that bounds its own blocking part, as the process probe does with ``timeout ps``):
        no ``timeout`` and no ``sh -c`` are forked, the command runs in a subshell of the session
        shell.  Its deadline is kept by cockpit: past ``timeout`` the session is torn down and
        rebuilt.  Its stdout should be text (a NUL byte is dropped by the shell); the frame stays
        exact whatever it prints.

        ``inline=True`` goes further for a command that cannot block and answers in a few lines
        (``kill -0 PID``, ``read -r x </proc/PID/stat``): it runs in the session shell itself, no
        fork at all, under the contract in :mod:`.frames` (no ``exec``/``cd``/``set``..., variables
        ``local``).  Same deadline as ``cheap``.
        """
        return (await self.run_many([command], timeout=timeout, cheap=cheap, inline=inline))[0]

    async def run_many(self, commands: Sequence[str], *, timeout: float = 10.0, cheap: bool | Sequence[bool] = False,
                       inline: bool = False) -> list[CommandResult]:
        """Run independent ``commands`` in order, their frames written in one go: one round trip for
        all of them instead of one each.  Every command keeps its own frame (id, exit code, lengths),
        its own deadline (from the end of the one before) and the rules of :meth:`run`: one that
        times out is reported ``timed_out`` and the shell rebuilt, the ones after it run on the new
        shell (they had not started); a shell that dies before saying it starts the current command
        has the rest run once more on a new shell; one that dies after raises :class:`RemoteError`
        for the whole batch, and nothing after it is run again.  ``cheap`` may be one flag per
        command: cheap reads and a watched command in one batch, each frame in its own mode.
        """
        flags = [bool(cheap)] * len(commands) if isinstance(cheap, bool) else [bool(c) for c in cheap]
        if len(flags) != len(commands):
            raise ValueError(f"{len(flags)} cheap flags for {len(commands)} commands")
        results: list[CommandResult] = []
        rest = [(c, Mode.INLINE if inline else Mode.CHEAP if f else Mode.WATCHED) for c, f in zip(commands, flags, strict=True)]
        retried = False
        async with self._lock:
            while rest:
                sh = await self._ensure(max(timeout, 5.0))
                batch = [(next(self._ids), c, m) for c, m in rest]
                text = "".join(frame(i, c, m, timeout=timeout, has_timeout=self.has_timeout, bytes_len=self.bytes_len) for i, c, m in batch)
                started: list[bool] = []
                t0 = time.monotonic()
                try:
                    await sh.proc.write(text.encode())
                    for ident, command, mode in batch:
                        started.clear()
                        t0 = time.monotonic()
                        limit = timeout if mode is not Mode.WATCHED else timeout + GRACE_S  # no remote watchdog: cockpit's deadline is the one
                        code, out, err = await _within(self._read_frame(sh, ident, started, mode), limit)
                        dt = time.monotonic() - t0
                        timed_out = code in (124, 137) and dt >= timeout * 0.95
                        results.append(CommandResult(command, code, out, err, dt, timed_out=timed_out))
                        rest.pop(0)
                except (asyncio.TimeoutError, TimeoutError):
                    await self._kill()
                    results.append(CommandResult(rest.pop(0)[0], 124, b"", b"cockpit: the session did not answer; it was rebuilt",
                                                 time.monotonic() - t0, timed_out=True))
                except (OSError, EOFError, ConnectionError) as e:
                    died = await self._died(sh.proc, e)
                    if not started and not retried and died.layer is not Layer.SSH:
                        retried = True
                        self.retries += 1  # the command never started: running it on a new shell runs it once
                        continue
                    raise died from e
        return results

    async def _read_frame(self, sh: _Shell, ident: int, started: list[bool], mode: Mode) -> tuple[int, bytes, bytes]:
        code, olen, elen, cut = await self._read_header(sh, ident, started)
        out, err = await self._read_payload(sh, olen, elen, mode, cut)
        return code, out, err

    async def _read_header(self, sh: _Shell, ident: int, started: list[bool]) -> tuple[int, int, int, bool]:
        while True:
            line = await sh.reader.readline(_NOISE_LINE)
            if not line:
                raise EOFError("session closed")
            body = line.rstrip(b"\r\n")
            m = HEADER.match(body)
            if m and int(m.group(1)) == ident:
                return int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5) is not None
            g = GO.match(body)
            if g and int(g.group(1)) == ident:
                started.append(True)
            # anything else is noise from a previous, abandoned frame or a startup message: skip

    async def _read_payload(self, sh: _Shell, olen: int, elen: int, mode: Mode, cut: bool) -> tuple[bytes, bytes]:
        """The frame's stdout and stderr, each line capped, each stream cut at OUTPUT_MAX."""
        streams = []
        by_shell = (stdout_cut_by_shell(mode, self.bytes_len), stderr_cut_by_shell(mode, self.bytes_len))
        for total, shell_cut in zip((olen, elen), by_shell, strict=True):
            sent = min(total, OUTPUT_MAX) if sh.capped or shell_cut else total
            capper = LineCapper(limit=OUTPUT_MAX)
            await sh.reader.feed_exact(sent, capper)
            data = capper.finish(not_sent=total - sent)
            if cut and total >= INLINE_MAX:
                data += f"\n\u2026[cockpit: an inline command's output is read up to {INLINE_MAX} bytes]\n".encode()
            streams.append(data)
        return streams[0], streams[1]

    async def _died(self, proc: SessionProcess, exc: BaseException) -> RemoteError:
        code = await proc.exit_status(2.0)
        stderr = proc.stderr_tail().decode("utf-8", "replace")
        await self._kill()
        lost = self._lost_layer() if self._lost_layer else None
        if lost is not None:
            err = RemoteError(lost, "the SSH connection was lost during a command", hint="cockpit reconnects with backoff", output=stderr)
        else:
            layer, msg, hint = classify_start_failure(code, stderr, runtime=self._words)
            err = RemoteError(layer, msg, hint=hint, output=stderr)
        self.last_error = err
        self.rebuilds += 1
        return err

    async def _kill(self) -> None:
        sh, self._sh = self._sh, None
        self.shell_pid = None
        if sh is not None:
            sh.proc.close()
            await sh.proc.wait_closed()

    async def close(self) -> None:
        await self._kill()
