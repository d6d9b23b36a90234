"""One action at a time per target, wherever cockpit runs: the lock lives on the target's host.

A lock in the config directory only stops two cockpits that share that directory; two checkouts
of one project, or two laptops, would act on one container at once (the second ran ``stop`` in
the middle of the first's attempt).  So the action lock is held **on the host cockpit reaches
over SSH** (for pct, docker and podman that is the host, not the container: a reboot does not
end it; for Slurm the login node): an ``flock`` on ``/run/lock/cockpit-<runtime>-<container>.lock``
(``/tmp`` when ``/run/lock`` is not writable; ``$COCKPIT_LOCK_DIR`` in the host's SSH environment
overrides both, which the test lab uses to keep its labs apart).  For ``runtime = "none"`` and
``"slurm"`` the name comes from the job's workdir: two targets with one workdir are one job.

Who holds it: a shell on a channel of its own takes the lock, writes the holder (user, local host,
action, since when, cockpit's pid) to ``FILE.who.<uid>`` and waits on ``cat`` for its stdin.  When
the action ends cockpit closes the channel; when cockpit dies (SIGKILL, a crash, a lost laptop)
the connection closes, sshd closes the channel, ``cat`` reads EOF and the lock goes with its
shell.  No stale lock file to clean up, ever: an ``flock`` dies with its holder.  A second cockpit
that finds it taken reads the holder and is refused (:class:`Busy`, exit 75 in the CLI) naming
it; ``wait=True`` polls with a capped backoff instead.  Observation never takes the lock.

Beside it, two cheaper locks stay: the engine's ``asyncio.Lock`` (one process) and an ``flock``
on ``<journal dir>/<target>.lock`` (one config directory), which is all there is for a local
transport (the demo) and what still protects when the host cannot be reached (its action then
fails on connectivity anyway) or has no ``flock``.  The host lock holds one of the transport's
SSH channel slots; where sshd turns out to allow too few channels for it and the host's shell
and one command, it gives its slot back (logged) rather than stall the action it protects.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import getpass
import hashlib
import logging
import os
import shlex
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..config import Config
from .layers import Layer
from .remote.base import RemoteError, Transport

__all__ = ["Busy", "Holder", "TargetLock", "lock_name", "holder_script", "safe_name"]

log = logging.getLogger(__name__)

#: the first word of each status line the host's lock shell prints
MARK = "@@cockpit-lock"
#: seconds to wait for the host to answer the lock's shell (past connecting) before going on without it
ANSWER_S = 20.0
#: ``wait=True``: first and longest pause between tries for a lock held elsewhere
POLL_S, POLL_MAX_S = 0.5, 5.0
#: channel slots the host lock needs left for the host's shell and one command besides its own
_ROOM = 3


class Busy(Exception):
    """The target is already running an action (here or in another cockpit, anywhere)."""


@dataclass(frozen=True)
class Holder:
    """Who holds a target: what the refused cockpit prints."""

    user: str
    host: str
    action: str
    since: float
    pid: int

    @classmethod
    def me(cls, action: str) -> Holder:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):  # no passwd entry (a container's uid): the number says as much
            user = str(os.getuid())
        return cls(user, socket.gethostname(), action, time.time(), os.getpid())

    def line(self) -> str:
        """One line, tab-separated; each field stripped of control characters (it is read back
        and printed by another cockpit)."""
        fields = [self.user, self.host, self.action, str(int(self.since)), str(self.pid)]
        return "\t".join(_clean(f) for f in fields)

    @classmethod
    def parse(cls, line: str) -> Holder | None:
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 5:
            return None
        try:
            return cls(parts[0], parts[1], parts[2], float(parts[3]), int(parts[4]))
        except ValueError:
            return None

    def describe(self) -> str:
        t = time.localtime(self.since)
        fmt = "%H:%M:%S" if time.strftime("%Y%m%d", t) == time.strftime("%Y%m%d") else "%Y-%m-%d %H:%M:%S"
        return f"{self.action} by {self.user}@{self.host} since {time.strftime(fmt, t)} (pid {self.pid})"


def _clean(text: str, cap: int = 64) -> str:
    return "".join(c if c.isprintable() and c != "\t" else "?" for c in text)[:cap] or "?"


def safe_name(name: str) -> str:
    """A file name for ``name``: its safe characters, and past 64 of them a hash of the whole
    (a file name longer than 255 bytes could not be opened)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "target"
    if len(safe.encode()) > 64:
        safe = safe.encode()[:48].decode("utf-8", "ignore") + "-" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return safe


def lock_name(cfg: Config) -> str:
    """The lock file's name on the host: the container for pct/docker/podman (``cockpit-pct-200.lock``),
    the job's workdir for a job on the host or a Slurm login node."""
    t = cfg.target
    what = str(t.container) if t.runtime in ("pct", "docker", "podman") else cfg.job.workdir
    return f"cockpit-{t.runtime}-{safe_name(what.strip('/') or 'root')}.lock"


def holder_script(name: str, who: str) -> str:
    """The host's ``sh`` text: take the lock without blocking, say ``held`` and keep it until stdin
    closes; or say ``busy`` and print every holder note.  ``name`` and ``who`` are quoted here."""
    f, w = shlex.quote(name), shlex.quote(who)
    return (
        'd="${COCKPIT_LOCK_DIR:-/run/lock}"; [ -z "${COCKPIT_LOCK_DIR:-}" ] || mkdir -p "$d" 2>/dev/null; '
        '{ [ -d "$d" ] && [ -w "$d" ]; } || d=/tmp; '
        f'f="$d/"{f}; '
        f'command -v flock >/dev/null 2>&1 || {{ echo "{MARK} noflock $f"; exit 0; }}; '
        '[ -e "$f" ] || { true >>"$f"; } 2>/dev/null; '
        f'[ -r "$f" ] || {{ echo "{MARK} error $f"; exit 0; }}; '
        'exec 9<"$f"; '
        'if flock -n 9; then '
        f'w="$f.who.$(id -u)"; {{ printf "%s\\n" {w} >"$w"; }} 2>/dev/null; '
        f'echo "{MARK} held $f"; cat >/dev/null; rm -f "$w"; '
        f'else echo "{MARK} busy $f"; for w in "$f".who.*; do [ -f "$w" ] && cat "$w"; done 2>/dev/null; fi'
    )


class _LocalLock:
    """The ``flock`` on ``<journal dir>/<target>.lock``: one config directory, any process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: IO[str] | None = None

    def acquire(self, me: Holder) -> str | None:
        """None once held (or when the file cannot be had: a full or read-only disk, the journal
        says so); else who holds it, in words."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(self.path, "a+")
        except OSError as e:
            log.info("no lock file %s: %s", self.path, e)
            return None
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            text = fh.read()
            fh.close()
            holder = Holder.parse(text)
            return holder.describe() if holder is not None else f"another cockpit holds {self.path}"
        self.fh = fh
        with contextlib.suppress(OSError):  # who holds it, for a refused cockpit (a full disk may not take it)
            fh.seek(0)
            fh.truncate()
            fh.write(me.line())
            fh.flush()
        return None

    def release(self) -> None:
        fh, self.fh = self.fh, None
        if fh is None:
            return
        with contextlib.suppress(OSError):
            fh.truncate(0)
        with contextlib.suppress(OSError):
            fcntl.flock(fh, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):  # a full disk fails the flush of an unwritten note: close anyway
            fh.close()


class _HostLock:
    """The lock's shell on the host, on a channel of its own, for as long as the action runs."""

    def __init__(self, transport: Transport, name: str, answer_s: float = ANSWER_S) -> None:
        self.transport = transport
        self.name = name
        #: seconds for the connection (when there is none yet) and the lock's first answer
        self.answer_s = answer_s
        self.path = ""
        self.task: asyncio.Task[None] | None = None
        self.released = False

    async def try_acquire(self, me: Holder) -> tuple[str, str]:
        """``("held", path)``, ``("busy", holder notes)`` or ``("unavailable", why)``."""
        answer: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        cmd = "/bin/sh -c " + shlex.quote(holder_script(self.name, me.line()))
        self.released = False
        self.task = asyncio.ensure_future(self._hold(self.transport.stream_host(cmd), answer))
        try:
            state, text = await asyncio.wait_for(asyncio.shield(answer), self.answer_s)
        except (asyncio.TimeoutError, TimeoutError):
            state, text = "unavailable", f"the host did not answer in {self.answer_s:g}s"
        except RemoteError as e:
            state, text = "unavailable", e.message
        except BaseException:  # cancelled while asking: a lock taken a moment later must not stay behind
            await self.release()
            raise
        if state != "held":
            await self.release()
        return state, text

    async def _hold(self, stream: AsyncIterator[bytes], answer: asyncio.Future[tuple[str, str]]) -> None:
        buf = b""
        try:
            async for chunk in stream:
                if answer.done():
                    continue  # held: nothing more comes until the channel closes
                buf += chunk
                first, nl, rest = buf.partition(b"\n")
                if nl and first.startswith(f"{MARK} held ".encode()):
                    self.path = first.decode("utf-8", "replace").split(" ", 2)[2]
                    answer.set_result(("held", self.path))
        except Exception as e:  # noqa: BLE001 - the channel's end in any form (asyncssh, OS): the caller's answer, or a warning
            err = e if isinstance(e, RemoteError) else RemoteError(Layer.SSH, f"the lock's channel failed: {e!r}")
            if not answer.done():
                answer.set_exception(err)
            elif not self.released:
                log.warning("the target lock %s on the host was lost: %s", self.path, err.message)
            return
        if not answer.done():
            first, _, rest = buf.partition(b"\n")
            words = first.decode("utf-8", "replace").split(" ", 2)
            state = words[1] if len(words) == 3 and words[0] == MARK else "gone"
            self.path = words[2] if len(words) == 3 else ""
            text = rest.decode("utf-8", "replace") if state == "busy" else first.decode("utf-8", "replace")
            answer.set_result((state, text))
        elif not self.released:
            log.warning("the target lock %s on the host was lost (its channel closed)", self.path)

    async def release(self) -> None:
        """Close the channel: the host's ``cat`` reads EOF, its shell exits, the flock goes with it."""
        self.released = True
        task, self.task = self.task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class TargetLock:
    """The three locks taken in order (process, config directory, host) and released in reverse."""

    def __init__(self, cfg: Config, transport: Transport) -> None:
        self.target = cfg.display_name
        self.local = _LocalLock(cfg.journal_path.parent / f"{safe_name(cfg.display_name)}.lock")
        self.host: _HostLock | None = None if _is_local(transport) else _HostLock(transport, lock_name(cfg), ANSWER_S + cfg.ssh.connect_timeout)
        self.transport = transport
        #: why the last action ran without the host's lock ("" when it had it, or needs none)
        self.without_host = ""
        self._watch: asyncio.Task[None] | None = None

    async def acquire(self, what: str, *, wait: bool = False) -> None:
        """Hold the target for ``what`` or raise :class:`Busy` naming the holder; ``wait``: poll
        (0.5 s, growing to 5 s) until it is free instead."""
        pause = POLL_S
        while True:
            refused = await self._try(Holder.me(what))
            if refused is None:
                return
            if not wait:
                raise Busy(f"{self.target} is busy: {refused}")
            log.info("%s is busy: %s; trying again in %.1fs", self.target, refused, pause)
            await asyncio.sleep(pause)
            pause = min(POLL_MAX_S, pause * 1.5)

    async def _try(self, me: Holder) -> str | None:
        """None once every lock is held; else who holds the target, in words."""
        other = self.local.acquire(me)
        if other is not None:
            return other
        self.without_host = ""
        if self.host is None:
            return None
        slots = getattr(self.transport, "slots", None)
        if slots is not None and slots.learned is not None and slots.limit < _ROOM:
            self.without_host = f"sshd allows {slots.limit} channel(s) beside the session: too few to keep the host's lock"
            log.warning("%s: %s", self.target, self.without_host)
            return None
        try:
            state, text = await self.host.try_acquire(me)
        except BaseException:
            self.local.release()
            raise
        if state == "held":
            if slots is not None:
                self._watch = asyncio.ensure_future(self._give_way(slots))
            return None
        if state == "busy":
            self.local.release()
            holders = [h for h in map(Holder.parse, text.splitlines()) if h is not None]
            if holders:
                return max(holders, key=lambda h: h.since).describe()
            return f"another cockpit holds {self.host.path or self.host.name} on its host"
        # no answer, no flock there, the host out of reach: the action's own checks report the host
        self.without_host = f"no lock on the host ({state}: {text.strip()[:200]})"
        log.warning("%s: %s; going on with this machine's lock only", self.target, self.without_host)
        return None

    async def _give_way(self, slots: Any) -> None:
        await slots.wait_below(_ROOM)
        log.warning("%s: sshd allows %d channel(s) beside the session: the host's lock gives its own back", self.target, slots.limit)
        self.without_host = "the host's lock gave its SSH channel back (sshd MaxSessions)"
        if self.host is not None:
            await self.host.release()

    async def release(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
        try:
            if self.host is not None:
                await self.host.release()
        finally:
            self.local.release()


def _is_local(transport: Transport) -> bool:
    """A transport on this machine (the demo, a job on one's own box): the local lock file is the host's."""
    from .remote.local import LocalTransport  # noqa: PLC0415 - no asyncssh import for the check

    return isinstance(transport, LocalTransport)
