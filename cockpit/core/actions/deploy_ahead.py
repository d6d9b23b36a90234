"""Deploy's source read once, and its upload started while connect still runs.

:func:`read_source` is the ``source`` stage's work (the tree walked, links judged, every file
hashed, the code version), done where it suits the caller: the attempt does it before connect,
while it waits for the network anyway.  :func:`start` then sends a small upload (packed at most
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
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..hashing import file_sha256
from ..layers import Layer
from ..remote.base import CommandResult, RemoteError
from .base import ActionContext, StageFailed
from .deploy_tree import SourceTree, collect_tree

__all__ = ["Source", "Ahead", "read_source", "start", "NOT_YET"]

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
    from .deploy import _refuse_links, code_version  # noqa: PLC0415 - deploy imports this module

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


def start(ctx: ActionContext, version: dict[str, Any] | None) -> Ahead | None:
    """Read the source and, when the tar is small, start the upload batch (with the riders) through
    the session; None when there is no source to deploy.  Call it while connect runs."""
    from .deploy import SESSION_UPLOAD_MAX, _pack, upload_batch  # noqa: PLC0415 - deploy imports this module

    cfg = ctx.cfg
    if cfg.deploy_source is None:
        return None
    ahead = Ahead()
    try:
        ahead.source = read_source(cfg, version)
    except StageFailed as e:
        ahead.error = e  # said by the source stage, in its turn
        return ahead
    except OSError:
        return None  # the source stage reads it again and says what is wrong
    if ahead.source.size > AHEAD_RAW_MAX:
        return ahead
    ahead.blob = _pack(ahead.source.files)
    if len(ahead.blob) > SESSION_UPLOAD_MAX:
        return ahead
    dest = cfg.deploy.dest or cfg.job.workdir
    wd = shlex.quote(cfg.job.workdir)
    commands = upload_batch(ahead.blob, dest, sorted(ahead.source.manifest))
    commands[0] = f"{{ test -d {wd} && test -w {wd}; }} || exit {NOT_YET}; {commands[0]}"
    ahead.batch = asyncio.ensure_future(ctx.run_many(commands, timeout=300))
    return ahead
