"""One action at a time per target, wherever cockpit runs: the lock lives on the target's host.

A lock in the config directory only stops two cockpits that share that directory; two checkouts
of one project, or two laptops, would act on one container at once (the second ran ``stop`` in
the middle of the first's attempt).  So the action lock is held **on the host cockpit reaches
over SSH** (for pct, docker and podman that is the host, not the container: a reboot does not
end it; for Slurm the login node): an ``flock`` on ``/run/lock/cockpit-<runtime>-<container>.lock``
(``/tmp`` when ``/run/lock`` is not writable; ``$COCKPIT_LOCK_DIR`` in the host's SSH environment
overrides both, which the test lab uses to keep its labs apart).  For ``runtime = "none"`` and
``"slurm"`` the name comes from the job's workdir: two targets with one workdir are one job.

Who holds it: one short command on the host takes the lock and hands the locked file to a
detached holder process, writes the holder (user, local host, action, since when, cockpit's pid)
to ``FILE.who.<uid>``, and returns: the lock keeps no SSH channel, so a group of targets on one
host acting at once never waits for channel slots that their own locks hold.  The holder lives
while the SSH connection's own ``sshd`` process does and while its token file exists.  When the
action ends cockpit removes the token and ends the holder; when cockpit dies (SIGKILL, a crash, a
lost laptop) the connection closes, its ``sshd`` exits and the holder follows within a second.
No stale lock file to clean up, ever: an ``flock`` dies with its holder.  A second cockpit that
finds it taken reads the holder and is refused (:class:`Busy`, exit 75 in the CLI) naming it;
``wait=True`` polls with a capped backoff instead.  Observation never takes the lock.

Beside it, two cheaper locks stay: the engine's ``asyncio.Lock`` (one process) and an ``flock``
on ``<journal dir>/<target>.lock`` (one config directory), which is all there is for a local
transport (the demo) and what still protects when the host cannot be reached (its action then
fails on connectivity anyway) or has no ``flock``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import getpass
import hashlib
import logging
import os
import secrets
import shlex
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .config import Config
from .remote.base import RemoteError, Transport
from .runtimes import Runtime, runtime_for

__all__ = ["Busy", "Holder", "TargetLock", "lock_name", "holder_script", "safe_name"]

log = logging.getLogger(__name__)

#: the first word of each status line the host's lock shell prints
MARK = "@@cockpit-lock"
#: seconds to wait for the host to answer the lock's shell (past connecting) before going on without it
ANSWER_S = 20.0
#: ``wait=True``: first and longest pause between tries for a lock held elsewhere
POLL_S, POLL_MAX_S = 0.5, 5.0
#: seconds a lock still held for a cockpit of this machine that is gone (killed a moment ago), or
#: held with no holder note (a holder on its way out), is waited for before Busy: such a holder
#: ends with that cockpit's SSH connection, or its release, a moment later
DEAD_HOLDER_S = 3.0
#: a release looks this many times (built-ins, a few ms in all) for its killed holder to be gone,
#: then waits at most this many 20 ms ticks (the holder's own loop, its token gone, ends within a
#: quarter second even if the kill went astray); of 100 releases in a test 99 found it gone by
#: the third look, one at the 25th; a sleep at once cost 8-12 ms a release
RELEASE_SPINS, RELEASE_WAIT_TICKS = 100, 100


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


def lock_name(cfg: Config, runtime: Runtime | None = None) -> str:
    """The lock file's name on the host: the container for pct/docker/podman (``cockpit-pct-200.lock``),
    the job's workdir for a job on the host or a Slurm login node."""
    rt = runtime if runtime is not None else runtime_for(cfg)
    what = rt.lock_identity(cfg)
    return f"cockpit-{rt.kind}-{safe_name(what.strip('/') or 'root')}.lock"


def holder_script(name: str, who: str, token: str) -> str:
    """The host's ``sh`` text: take the lock without blocking and hand it to a detached holder
    process tied to this SSH connection, then say ``held PID PATH`` and exit (so the lock keeps no
    SSH channel); or say ``busy PATH`` and print every holder note.

    The holder keeps the locked file open (fd 9) and lives while the connection's own ``sshd``
    process does (found by walking up from this shell: each channel's shell is its child; known by
    pid and start time) and while its token file exists; cockpit's release removes the token and
    kills it, and when cockpit dies the connection goes, its ``sshd`` exits and the holder follows
    within a quarter of a second.
    ``name``, ``who`` and ``token`` are quoted here."""
    f, w, t = shlex.quote(name), shlex.quote(who), shlex.quote(token)
    # the connection's sshd is known by its pid *and* start time (pids wrap: a reused one must not
    # keep a dead cockpit's lock); one fork, a sleep, every quarter second while an action runs.  The
    # sshd's stat is read with built-ins only (its 22nd field, past the command name, is the
    # start time); ``st`` sets ``v`` rather than printing it: a ``$(st)`` subshell would be a fork
    # holding fd 9, the lock, a moment past the holder's own end
    hold = ('p=$1 k=$2 w=$3; st() { v=; l=; read -r l </proc/$p/stat 2>/dev/null || return 0; l=${l##*) }; set -- $l; v=${20}; }; '
            'st; s0=$v; while [ -n "$s0" ] && [ -e "$k" ] && st && [ "$v" = "$s0" ]; do { sleep 0.25 || sleep 1; } 9<&- 2>/dev/null; done; rm -f "$k" "$w"')
    return (
        'd="${COCKPIT_LOCK_DIR:-/run/lock}"; [ -z "${COCKPIT_LOCK_DIR:-}" ] || mkdir -p "$d" 2>/dev/null; '
        '{ [ -d "$d" ] && [ -w "$d" ]; } || d=/tmp; '
        f'f="$d/"{f}; '
        f'command -v flock >/dev/null 2>&1 || {{ echo "{MARK} noflock $f"; exit 0; }}; '
        '[ -e "$f" ] || { true >>"$f"; } 2>/dev/null; '
        f'[ -r "$f" ] || {{ echo "{MARK} error $f"; exit 0; }}; '
        # the connection's sshd: the nearest ancestor whose name starts with sshd (built-ins only: a
        # `cat`, `sed` and `cut` at each level cost a few ms of every attempt's lock)
        'c=$$; while [ "${c:-0}" -gt 1 ]; do n=; read -r n </proc/$c/comm 2>/dev/null; case "$n" in sshd*) break;; esac; '
        'l=; read -r l </proc/$c/stat 2>/dev/null || l=; l=${l##*) }; set -- $l; c=${2:-0}; done; '
        f'[ "${{c:-0}}" -gt 1 ] || {{ echo "{MARK} noconn $f"; exit 0; }}; '
        'exec 9<"$f"; '
        'if flock -n 9; then '
        f'w="$f.who.$(id -u)"; k="$f.hold."{t}; {{ printf "%s\\n" {w} >"$w"; }} 2>/dev/null; : >"$k"; '
        f'nohup sh -c {shlex.quote(hold)} cockpit-lock-holder "$c" "$k" "$w" </dev/null >/dev/null 2>&1 & '
        f'echo "{MARK} held $! $f"; '
        f'else echo "{MARK} busy $f"; for w in "$f".who.*; do [ -f "$w" ] && cat "$w"; done 2>/dev/null; fi'
    )


def release_script(path: str, token: str, pid: int) -> str:
    """The host's ``sh`` text that gives the lock back: the holder's token goes, and the holder is
    killed when that pid is still the holder with this token (never another process), and waited
    for: the lock is free when the script returns."""
    k, f, proc = shlex.quote(f"{path}.hold.{token}"), shlex.quote(path), f"/proc/{int(pid)}"
    # the flock is free only once the holder has exited, not when ``kill`` returns: wait for it to
    # be a zombie or gone (its files, the lock among them, are closed before it turns zombie; an
    # empty cmdline is not enough: a dying process drops its memory before its files).  Known by
    # its start time, read before the kill.  Built-ins only (``read`` drops the cmdline's NULs): no
    # fork at all when the holder is gone at the first looks
    return (f'rm -f {k} {f}.who.$(id -u); held() {{ x=; read -r x 2>/dev/null <{proc}/cmdline; case $x in *{k}*) return 0;; esac; return 1; }}; '
            f'up() {{ l=; read -r l 2>/dev/null <{proc}/stat || return 1; l=${{l##*) }}; case $l in Z*|X*) return 1;; esac; set -- $l; [ "${{20}}" = "$s0" ]; }}; '
            f'l=; read -r l 2>/dev/null <{proc}/stat; l=${{l##*) }}; set -- $l; s0=${{20:-}}; '
            f'if [ -n "$s0" ] && held; then kill {int(pid)} 2>/dev/null; i=0; while [ $i -lt {RELEASE_SPINS} ] && up; do i=$((i+1)); done; i=0; '
            f'while [ $i -lt {RELEASE_WAIT_TICKS} ] && up; do sleep 0.02; i=$((i+1)); done; fi; true')


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
    """The lock on the host, held by a detached process tied to the SSH connection (no channel)."""

    def __init__(self, transport: Transport, name: str, answer_s: float = ANSWER_S) -> None:
        self.transport = transport
        self.name = name
        #: seconds for the connection (when there is none yet) and the lock's answer
        self.answer_s = answer_s
        self.path = ""
        self.pid = 0
        self.token = ""

    async def try_acquire(self, me: Holder) -> tuple[str, str]:
        """``("held", path)``, ``("busy", holder notes)`` or ``("unavailable", why)``."""
        self.token = secrets.token_hex(8)
        cmd = "/bin/sh -c " + shlex.quote(holder_script(self.name, me.line(), self.token))
        try:
            res = await asyncio.wait_for(self.transport.run_host(cmd, timeout=self.answer_s), self.answer_s + 1)
        except (asyncio.TimeoutError, TimeoutError):
            return "unavailable", f"the host did not answer in {self.answer_s:g}s"
        except RemoteError as e:
            return "unavailable", e.message
        first, _, rest = res.stdout.decode("utf-8", "replace").partition("\n")
        words = first.split(" ", 3)
        if len(words) >= 3 and words[0] == MARK and words[1] == "held" and len(words) == 4 and words[2].isdigit():
            self.pid, self.path = int(words[2]), words[3]
            return "held", self.path
        if len(words) >= 3 and words[0] == MARK:
            self.path = " ".join(words[2:])
            return words[1], rest if words[1] == "busy" else first
        return "gone", (first or res.stderr.decode("utf-8", "replace")).strip()

    async def release(self) -> None:
        """Remove the holder's token and end it; a connection already gone took the holder with it."""
        pid, self.pid = self.pid, 0
        if not pid:
            return
        try:
            await self.transport.run_host(release_script(self.path, self.token, pid), timeout=10)
        except RemoteError as e:
            log.info("the target lock %s: release not confirmed (%s); it ends with the connection", self.path, e.message)


class TargetLock:
    """The three locks taken in order (process, config directory, host) and released in reverse."""

    def __init__(self, cfg: Config, transport: Transport) -> None:
        self.target = cfg.display_name
        self.local = _LocalLock(cfg.journal_path.parent / f"{safe_name(cfg.display_name)}.lock")
        self.host: _HostLock | None = None if _is_local(transport) else _HostLock(transport, lock_name(cfg, transport.runtime), ANSWER_S + cfg.ssh.connect_timeout)
        self.transport = transport
        #: why the last action ran without the host's lock ("" when it had it, or needs none)
        self.without_host = ""
        #: when a refusal first named a cockpit of this machine that is no longer running (None: not so)
        self._dead_holder_since: float | None = None

    async def acquire(self, what: str, *, wait: bool = False) -> None:
        """Hold the target for ``what`` or raise :class:`Busy` naming the holder; ``wait``: poll
        (0.5 s, growing to 5 s) until it is free instead."""
        pause = POLL_S
        while True:
            refused = await self._try(Holder.me(what))
            if refused is None:
                self._dead_holder_since = None
                return
            if not wait and self._dead_holder_since is not None and time.monotonic() - self._dead_holder_since < DEAD_HOLDER_S:
                await asyncio.sleep(POLL_S / 2)  # its cockpit is gone: its holder follows its connection at once
                continue
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
        try:
            state, text = await self.host.try_acquire(me)
        except BaseException:
            self.local.release()
            raise
        if state == "held":
            return None
        if state == "busy":
            self.local.release()
            holders = [h for h in map(Holder.parse, text.splitlines()) if h is not None]
            if holders:
                last = max(holders, key=lambda h: h.since)
                if last.host == socket.gethostname() and not _running(last.pid):
                    self._dead_holder_since = self._dead_holder_since or time.monotonic()
                return last.describe()
            # held with no note: a holder that has removed its note is on its way out (a release of
            # another process, or a connection that just closed): as short-lived as a dead cockpit's
            self._dead_holder_since = self._dead_holder_since or time.monotonic()
            return f"another cockpit holds {self.host.path or self.host.name} on its host"
        # no answer, no flock there, the host out of reach: the action's own checks report the host
        self.without_host = f"no lock on the host ({state}: {text.strip()[:200]})"
        log.warning("%s: %s; going on with this machine's lock only", self.target, self.without_host)
        return None

    async def release(self) -> None:
        try:
            if self.host is not None:
                await self.host.release()
        finally:
            self.local.release()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return True


def _is_local(transport: Transport) -> bool:
    """A transport on this machine (the demo, a job on one's own box): the local lock file is the host's."""
    from .remote.local import LocalTransport  # noqa: PLC0415 - no asyncssh import for the check

    return isinstance(transport, LocalTransport)
