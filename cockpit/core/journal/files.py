"""The journal's files on disk: private modes, appends that say when they fail, and the fault itself.

Modes: the journal, diffs and snapshots are created ``0600`` in ``0700`` directories (they hold
commands, paths, errors and code).  An existing journal file with a looser mode is tightened when
it is opened (its bytes are never touched); an existing directory is tightened only when it is
cockpit's own (``.cockpit``, or one cockpit creates inside the journal's directory), never a
directory the user chose to put the journal in.

A failed write (disk full, read-only file system, permissions) is a :class:`JournalFault`: a
``config``-layer problem naming the path and the fix.  The store keeps the records in memory and
writes them, in order, on the next write or :meth:`~cockpit.core.journal.store.Journal.flush`.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # pragma: no cover - always present on Linux/macOS
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking, still append-only
    fcntl = None  # type: ignore[assignment]

__all__ = ["JournalFault", "private_dir", "tighten_file", "open_append", "write_line", "sync", "fsync_dir", "flock"]

#: the name of cockpit's own directory beside the config (``.cockpit/journal.jsonl``)
OWN_DIR = ".cockpit"


@dataclass
class JournalFault:
    """The journal cannot be written: what, where, since when, and how many records wait."""

    path: str
    errno: int | None
    error: str
    since: float = field(default_factory=time.time)
    queued: int = 0

    @property
    def problem(self) -> str:
        n = self.queued
        kept = f"; {n} record{'s' if n != 1 else ''} kept in memory, written when it can be" if n else ""
        return f"cannot write the journal {self.path}: {self.error}{kept}"

    @property
    def fix(self) -> str:
        where = os.path.dirname(self.path) or "."
        if self.errno in (errno.ENOSPC, errno.EDQUOT):
            first = f"free space on the disk that holds {where}"
        elif self.errno == errno.EROFS:
            first = f"remount the file system of {where} read-write"
        elif self.errno in (errno.EACCES, errno.EPERM):
            first = f"make {self.path} and {where} writable by you"
        else:
            first = f"check {self.path} (a regular file in a writable directory)"
        return f"{first}, or set [journal] path to a file on another disk"

    @property
    def message(self) -> str:
        return f"{self.problem}\n  fix: {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        """Like :meth:`cockpit.core.config.ConfigError.to_dict` (the ``config`` layer)."""
        return {"layer": "config", "file": self.path, "key": "journal.path", "problem": self.problem, "fix": self.fix,
                "queued": self.queued, "since": self.since}


def _is_own(d: Path, root: Path | None) -> bool:
    return d.name == OWN_DIR or (root is not None and d != root and root in d.parents)


def private_dir(d: Path, root: Path | None = None) -> None:
    """Make ``d`` (and missing parents) with mode 0700; tighten it when it is cockpit's own
    (``.cockpit``, or below ``root``, the journal's directory) and looser than 0700."""
    missing: list[Path] = []
    p = d
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for m in reversed(missing):
        try:
            m.mkdir(mode=0o700)
        except FileExistsError:
            pass
        os.chmod(m, 0o700)  # mkdir's mode is filtered by the umask
    if not missing and _is_own(d, root):
        _tighten(d, 0o700)
    if root is not None and d != root:  # the directories between root and d are cockpit's too
        for p in d.parents:
            if p == root or root not in p.parents:
                break
            _tighten(p, 0o700)
    if root is not None and _is_own(root, None):
        _tighten(root, 0o700)


def _tighten(path: Path, mode: int) -> None:
    try:
        st = os.stat(path)
    except OSError:
        return
    if stat.S_IMODE(st.st_mode) & 0o077 and st.st_uid == os.geteuid():
        try:
            os.chmod(path, stat.S_IMODE(st.st_mode) & mode)
        except OSError:
            return


def tighten_file(path: Path) -> None:
    """An existing regular file readable or writable by others becomes owner-only (0600 at most);
    its content is not touched.  Devices, links to devices and others' files are left alone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077 and st.st_uid == os.geteuid():
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o600)
    except OSError:
        return
    finally:
        os.close(fd)


def open_append(path: Path) -> tuple[int, bool]:
    """``(fd, created)``: ``path`` opened for appending; created 0600 in a private directory."""
    parent = path.parent
    if not parent.exists():
        private_dir(parent)
    elif parent.name == OWN_DIR:
        _tighten(parent, 0o700)
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)  # read: is the last byte a newline?
        return fd, False
    except FileNotFoundError:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.fchmod(fd, 0o600)  # the umask may have taken bits away, never added: this is exact
        return fd, True


def flock(fd: int, lock: bool) -> None:
    if fcntl is None:  # pragma: no cover
        return
    fcntl.flock(fd, fcntl.LOCK_EX if lock else fcntl.LOCK_UN)


def write_line(fd: int, line: bytes) -> None:
    """Append one line; raises OSError when it could not be written whole.

    A file that does not end with a newline (a writer died mid-line, or a write failed half-way
    on a full disk) gets one first, so the torn fragment stays a line of its own.
    """
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
        line = b"\n" + line
    view = memoryview(line)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def sync(fd: int) -> None:
    """fsync; a device that does not support it (EINVAL) is not a failure."""
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
