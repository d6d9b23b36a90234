"""Deploy's source read once, and its upload started while connect still runs.

:func:`read_source` is the ``source`` stage's work (the tree walked, links judged, every file
hashed, the code version), done where it suits the caller: the attempt does it before connect,
while it waits for the network anyway.  :func:`~.deploy.start_ahead` then sends a small upload (packed at most
:data:`~.deploy.SESSION_UPLOAD_MAX`) with its checksums, and the riders later stages registered,
through the persistent session while connect's host check (``pct status``, a channel of its own)
is under way: the session is idle then.

Nothing is judged early.  Deploy's stages judge the answers once connect has passed, exactly as
they would judge their own commands (:meth:`Ahead.take`); when connect fails, the answers are
dropped.  The early upload writes nothing unless the workdir is a writable directory (the very
test connect's ``workdir exists`` stage makes), so a connect that fails there leaves the target
as it was; when the test fails, or the batch could not run, deploy runs its own batch after
connect, as without this module.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..hashing import file_sha256
from ..layers import Layer
from ..remote.base import CommandResult, RemoteError
from .base import StageFailed
from .deploy_tree import SourceTree, collect_tree

__all__ = ["Source", "Ahead", "read_source", "code_version", "NOT_YET", "AHEAD_RAW_MAX"]

#: the early upload's exit status when the workdir is not (yet) a writable directory: nothing written
NOT_YET = 97
#: the most source bytes packed ahead (a larger source goes the usual way: packed in the upload stage)
AHEAD_RAW_MAX = 1 << 20


@dataclass
class Source:
    """What the ``source`` stage found: the files to send, their manifest, the code version."""

    src: Path
    tree: SourceTree
    manifest: dict[str, str]
    version: dict[str, Any]
    size: int

    @property
    def files(self) -> dict[str, Path]:
        return self.tree.files


def read_source(cfg: Any, version: dict[str, Any] | None = None) -> Source:
    """The ``source`` stage's reading of ``[deploy] source`` (which must be set); raises
    :class:`~.base.StageFailed` (layer ``config``) for a source that cannot be deployed.
    ``version``: the code version already computed for this source (the attempt's)."""
    src: Path = cfg.deploy_source
    if not src.exists():
        raise StageFailed(Layer.CONFIG, f"deploy source {src} does not exist", advice="fix [deploy] source (relative to the config file)")
    tree = collect_tree(src, cfg.deploy.exclude, follow_symlinks=cfg.deploy.follow_symlinks)
    _refuse_links(tree, src)
    if not tree.files:
        raise StageFailed(Layer.CONFIG, f"deploy source {src} has no files after exclude", advice="check [deploy] exclude")
    manifest = {rel: file_sha256(p) for rel, p in tree.files.items()}
    size = sum(p.stat().st_size for p in tree.files.values())
    return Source(src, tree, manifest, version if version is not None else code_version(src), size)


@dataclass
class Ahead:
    """The source read ahead (or why it could not be), the packed tar, and the early batch."""

    source: Source | None = None
    error: StageFailed | None = None
    blob: bytes | None = None
    batch: asyncio.Future[list[CommandResult]] | None = field(default=None, repr=False)

    async def take(self) -> list[CommandResult] | None:
        """The early batch's answers, to be judged as deploy's own; None when deploy must run its
        batch itself (it could not run, or the workdir test held the upload back)."""
        if self.batch is None:
            return None
        batch, self.batch = self.batch, None
        try:
            res = await batch
        except RemoteError:
            return None
        return None if not res or res[0].exit_code == NOT_YET else res

    def drop(self) -> None:
        """Connect failed: the early batch's answers are not wanted (left to finish, never judged)."""
        batch, self.batch = self.batch, None
        if batch is not None:
            batch.add_done_callback(lambda f: f.cancelled() or f.exception())


def code_version(source: Path) -> dict[str, Any]:
    """git commit + a hash of uncommitted changes when ``source`` is in a git work tree."""
    cwd = source if source.is_dir() else source.parent
    info: dict[str, Any] = {"source": str(source), "git_commit": None, "dirty": False, "dirty_hash": None}

    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return info
    info["git_commit"] = commit.strip()
    status = git("status", "--porcelain", "--", ".") or ""
    if status.strip():
        h = hashlib.sha256((git("diff", "HEAD", "--", ".") or "").encode())
        untracked = git("ls-files", "--others", "--exclude-standard", "--", ".") or ""
        for rel in sorted(untracked.splitlines()):
            p = cwd / rel
            h.update(rel.encode() + b"\0")
            if p.is_file():
                h.update(file_sha256(p).encode())
        info["dirty"] = True
        info["dirty_hash"] = h.hexdigest()[:12]
    return info


def _pack(files: dict[str, Path]) -> bytes:
    """Every file as a regular file (a followed link's content, never a link), its name as bytes
    (GNU format: long names, and names that are not UTF-8, extract as they were)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1, format=tarfile.GNU_FORMAT,
                      encoding="utf-8", errors="surrogateescape") as tar:
        for rel, p in files.items():
            with open(p, "rb") as fh:  # fstat of what is read: a link's target, as it is now
                ti = tar.gettarinfo(arcname=rel, fileobj=fh)
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                tar.addfile(ti, fh)
    return buf.getvalue()


def _refuse_links(tree: SourceTree, src: Path) -> None:
    """Fail the source stage (``config``) on a link that points outside the source, or loops."""
    bad = tree.refused
    if not bad:
        return
    first = bad[0]
    more = f" (and {len(bad) - 1} more: {', '.join(repr(p.rel) for p in bad[1:4])})" if len(bad) > 1 else ""
    if first.kind == "outside":
        fix = ("copy the file into the source, add the link to [deploy] exclude, or set [deploy] follow_symlinks = true "
               "to deploy what it points to")
    else:
        fix = "remove the link or add it to [deploy] exclude"
    raise StageFailed(Layer.CONFIG, f"symlink in deploy source {src}: {first.describe()}{more}", advice=fix,
                      data={"links": [{"path": p.rel, "target": p.target, "problem": p.kind} for p in bad[:50]]})
