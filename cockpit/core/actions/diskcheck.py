"""The disk, not the code: free space and inodes where a failed job writes.

A checkpoint volume that fills up makes ``torch.save`` raise ``basic_ios::clear: iostream error``
or ``enforce fail at inline_container.cc … unexpected pos``: PyTorch never says ENOSPC, and the
traceback points at the code.  So when a job has failed, one command in the target (one round
trip, only then) reads ``df -P`` and ``df -Pi`` for the job's workdir, its log directory, ``/tmp``
and ``/dev/shm``; a full or nearly full filesystem is the cause, layer ``container``, named with
its mount and figures, ahead of the code's traceback.

Nearly full: at least :data:`FULL_PCT` % used (blocks or inodes), or less than
:data:`LOW_FREE` free on a filesystem of at least twice that size (a small one, such as
docker's 64 MiB ``/dev/shm``, always has less than that free, and is judged by its percentage).
"""

from __future__ import annotations

import logging
import os
import shlex
from dataclasses import dataclass

from ..remote.base import RemoteError
from .base import ActionContext

__all__ = ["DiskUse", "disk_command", "parse_disk", "full_filesystems", "check_disks", "describe", "disk_detail",
           "FULL_PCT", "LOW_FREE", "DISK_ADVICE"]

log = logging.getLogger(__name__)

#: a filesystem this full (percent of blocks or inodes used) counts as full
FULL_PCT = 98
#: less free space than this (bytes) counts as full, on a filesystem of at least twice the size
LOW_FREE = 64 << 20
#: the seconds the one df command may take (a hung network mount must not hold the verdict)
DF_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class DiskUse:
    """One path's filesystem as ``df -P`` / ``df -Pi`` report it (sizes in bytes)."""

    path: str
    role: str
    mount: str
    fs: str
    size: int
    used: int
    free: int
    pct: int
    inodes: int | None = None
    ifree: int | None = None
    ipct: int | None = None

    @property
    def full_space(self) -> bool:
        return self.pct >= FULL_PCT or (self.free < LOW_FREE and self.size >= 2 * LOW_FREE)

    @property
    def full_inodes(self) -> bool:
        return bool(self.inodes) and self.ipct is not None and self.ipct >= FULL_PCT

    @property
    def full(self) -> bool:
        return self.full_space or self.full_inodes


def _paths(workdir: str, log_path: str) -> list[tuple[str, str]]:
    """(path, role) to look at, each once, in the order a cause names them."""
    out: list[tuple[str, str]] = []
    log_dir = os.path.dirname(log_path) if log_path else ""
    for path, role in ((workdir, "the workdir"), (log_dir, "the log directory"), ("/tmp", "/tmp"), ("/dev/shm", "/dev/shm")):
        if path and path.startswith("/") and path not in [p for p, _ in out]:
            out.append((path, role))
    return out


def disk_command(paths: list[tuple[str, str]]) -> str:
    """One shell command: ``df -P`` and ``df -Pi`` for each path, each answer after an ``@PATH`` line."""
    parts = [f"echo @{shlex.quote(p)}; df -P -- {shlex.quote(p)}; df -Pi -- {shlex.quote(p)}" for p, _ in paths]
    return "{ " + "; ".join(parts) + "; } 2>/dev/null"


def _int(text: str) -> int | None:
    text = text.strip().rstrip("%")
    return int(text) if text.isdigit() else None


def parse_disk(out: str, paths: list[tuple[str, str]]) -> list[DiskUse]:
    """The filesystems of ``paths`` from :func:`disk_command`'s output (a path df could not read is left out)."""
    roles = dict(paths)
    found: list[DiskUse] = []
    path = ""
    table = ""
    space: dict[str, tuple[str, str, int, int, int, int]] = {}
    inodes: dict[str, tuple[int | None, int | None, int | None]] = {}
    for line in out.splitlines():
        if line.startswith("@"):
            path, table = line[1:], ""
            continue
        if line.startswith("Filesystem"):
            table = "inodes" if "Inodes" in line else "space"
            continue
        cols = line.split(None, 5)
        if not path or len(cols) < 6:
            continue
        if table == "space":
            size, used, free, pct = (_int(c) for c in cols[1:5])
            if size is not None and used is not None and free is not None and pct is not None:
                space[path] = (cols[5], cols[0], size * 1024, used * 1024, free * 1024, pct)
        elif table == "inodes":
            inodes[path] = (_int(cols[1]), _int(cols[3]), _int(cols[4]))
    for p, (mount, fs, size, used, free, pct) in space.items():
        n, nfree, npct = inodes.get(p, (None, None, None))
        found.append(DiskUse(p, roles.get(p, p), mount, fs, size, used, free, pct, n, nfree, npct))
    return found


def full_filesystems(uses: list[DiskUse]) -> list[DiskUse]:
    """The full ones, each mount once (the workdir and its log directory often share one)."""
    out: list[DiskUse] = []
    for u in uses:
        if u.full and u.mount not in [o.mount for o in out]:
            out.append(u)
    return out


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def describe(u: DiskUse) -> str:
    """``/ckpt (the workdir's filesystem, tmpfs) is full: 0 B free of 1.0 MiB (100% used)``."""
    what = f"{u.mount} ({u.role}'s filesystem, {u.fs})" if u.role.startswith("the ") else f"{u.mount} ({u.fs})"
    figures = []
    if u.full_space:
        figures.append(f"{_size(u.free)} free of {_size(u.size)} ({u.pct}% used)")
    if u.full_inodes:
        figures.append(f"{u.ifree} inodes free of {u.inodes} ({u.ipct}% used)")
    return f"{what} is full: " + ", ".join(figures)


async def check_disks(ctx: ActionContext, workdir: str, log_path: str) -> list[DiskUse]:
    """The full filesystems among the job's (one command in the target); [] when none, or when
    the target could not be asked (the check must never hide the verdict it adds to)."""
    paths = _paths(workdir, log_path)
    if not ctx.transport.runtime.local_scratch:  # a login node's /tmp is not the compute node's
        paths = [(p, r) for p, r in paths if r.startswith("the ")]
    if not paths:
        return []
    try:
        res = await ctx.run(disk_command(paths), timeout=DF_TIMEOUT_S)
    except RemoteError as e:
        log.info("no disk check: %s", e)
        return []
    return full_filesystems(parse_disk(res.stdout.decode("utf-8", "replace"), paths))


DISK_ADVICE = ("the disk, not the code: free space there (old checkpoints, caches, core files) or write "
               "elsewhere; `df -h` and `df -i` in the target")


def disk_detail(full: list[DiskUse], how: str, then: str = "") -> str:
    """``exited with code 1: disk full: /ckpt (…) is full: …; the job's error: …``."""
    text = f"{how}: disk full: " + "; ".join(describe(u) for u in full)
    return text + (f"; the job's error: {then}" if then else "")
