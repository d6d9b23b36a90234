"""Deploy the local source into the target, then prove what arrived is what was sent.

The source is walked (:mod:`.deploy_tree`: ``[deploy] exclude`` applied, symlinks followed when
they stay inside the source, refused when they point outside it unless ``[deploy]
follow_symlinks``, loops caught), packed into one gzip'd tar in memory with every file as a
regular file, unpacked by ``tar -xzf - -C DEST`` inside the target, and verified by comparing the
SHA-256 of every file there with a manifest computed locally.  A deploy that "worked" but left an
old file in place cannot pass.  A small tar (:data:`SESSION_UPLOAD_MAX`) goes through the persistent
session as a ``printf`` of its bytes, in one round trip with the checksums (and the commands later
stages let ride, :meth:`~.base.ActionContext.run_many`): no channel, no runtime exec such as ``pct
exec``; a larger one is streamed over its own SSH channel.

Names never become words of a command line: the remote check gets the list of files
NUL-separated from ``printf`` (every byte that is not plainly safe written as an octal escape,
so the command is ASCII) into ``xargs -0 sha256sum -z --``, through the persistent session, and
the answer is NUL-separated too (:func:`~cockpit.core.hashing.parse_sha256sum_z`): a name with
spaces, a newline, a backslash, quotes, a leading dash or bytes that are not UTF-8 is checked like
any other.  Where ``sha256sum`` has no ``-z`` (busybox), each file is hashed through a redirect
and the answer is one digest per line, in order.

The code version recorded with it is the git commit of the source plus a hash of uncommitted
changes (``git diff HEAD`` and untracked files), so two attempts of the same dirty tree have the
same version and two different edits never do.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from typing import Any

from ..hashing import parse_sha256sum_z
from ..layers import Layer, Verdict
from ..remote.base import CommandResult
from .base import ActionContext, StageFailed, VerdictBuilder, check
from .deploy_ahead import AHEAD_RAW_MAX, NOT_YET, Ahead, Source, _pack, _refuse_links, code_version, read_source
from .deploy_stale import printf_literal, remove_stale
from .deploy_tree import collect_files, collect_tree
from .deploy_tree import excluded as _excluded

__all__ = ["deploy", "upload_batch", "start_ahead", "_pack", "_refuse_links", "collect_files", "collect_tree", "code_version", "DEPLOY_PLAN", "checksum_command", "portable_checksum_command",
           "printf_literal", "remote_checksums", "_excluded"]

DEPLOY_PLAN = [("source", Layer.CONFIG), ("upload", Layer.CONTAINER), ("checksums", Layer.CONTAINER)]
#: the most packed bytes sent through the persistent session (``printf`` into ``tar``, four characters
#: a byte: the command stays under Linux's 128 KiB for one argument); more go on a channel of their own
SESSION_UPLOAD_MAX = 24 << 10
#: the exit status of the checksum command when the target's sha256sum has no -z (or no xargs)
NO_ZERO = 91


#: the most format text one command carries (Linux caps one argument, ``sh -c``'s script, at 128 KiB)
CHUNK_CHARS = 32_000


def _chunks(rels: list[str], extra: int) -> list[list[str]]:
    """``rels`` in runs whose printf text stays under :data:`CHUNK_CHARS` (``extra`` per name)."""
    out: list[list[str]] = [[]]
    size = 0
    for r in rels:
        n = len(printf_literal(os.fsencode(r))) + extra
        if out[-1] and size + n > CHUNK_CHARS:
            out.append([])
            size = 0
        out[-1].append(r)
        size += n
    return [c for c in out if c]


def checksum_command(dest: str, rels: list[str]) -> str:
    """``DIGEST  NAME`` records, NUL-separated, for ``rels`` under ``dest``: the names go to
    ``xargs -0`` NUL-separated from printf, never as words of the command; exit :data:`NO_ZERO`
    where ``sha256sum -z`` or ``xargs`` is missing."""
    names = printf_literal(b"".join(os.fsencode(r) + b"\0" for r in rels))
    return (f"cd -- {shlex.quote(dest)} || exit 90; "
            "if sha256sum -z /dev/null >/dev/null 2>&1 && command -v xargs >/dev/null 2>&1; "
            f"then printf {names} | xargs -0 sha256sum -z --; else exit {NO_ZERO}; fi")


def portable_checksum_command(dest: str, rels: list[str]) -> str:
    """POSIX ``sh`` for a ``sha256sum`` without ``-z`` (busybox): one digest per line for each of
    ``rels``, in order, ``-`` for a file that is not there (each name made by printf, kept whole
    even when it ends in a newline)."""
    parts = [f"cd -- {shlex.quote(dest)} || exit 90"]
    for r in rels:
        parts.append(f"f=$(printf {printf_literal(os.fsencode(r) + b'x')}); f=${{f%x}}; "
                     "if [ -f \"./$f\" ] && h=$(sha256sum < \"./$f\"); then echo \"${h%% *}\"; else echo -; fi")
    return "; ".join(parts)


async def remote_checksums(ctx: ActionContext, dest: str, rels: list[str], answered: list[CommandResult] | None = None) -> dict[str, str]:
    """{relative path: hex sha256} of the files under ``dest`` inside the target (absent: missing);
    ``answered``: the :func:`checksum_command` of each chunk, already run (in the upload's batch)."""
    out: dict[str, str] = {}
    parts = _chunks(rels, 4)
    if answered is None or len(answered) != len(parts):  # every chunk in one round trip (with the riders)
        answered = await ctx.run_many([checksum_command(dest, part) for part in parts], timeout=120)
    for res in answered:
        if res.exit_code == NO_ZERO:
            return await _portable_checksums(ctx, dest, rels)
        if res.exit_code == 90 or res.timed_out or (res.exit_code not in (0, 123) and not res.stdout):
            # 123: xargs says a sha256sum failed (a file is missing): the comparison names it
            check(res, Layer.CONTAINER, f"checksumming the files in {dest}")
        out.update(parse_sha256sum_z(res.stdout)[0])
    return out


async def _portable_checksums(ctx: ActionContext, dest: str, rels: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in _chunks(rels, 110):
        res = await ctx.run(portable_checksum_command(dest, part), timeout=120)
        check(res, Layer.CONTAINER, f"checksumming the files in {dest}")
        digests = res.stdout.decode("ascii", "replace").split("\n")
        out.update({r: d for r, d in zip(part, digests, strict=False) if len(d) == 64})
    return out


def upload_batch(blob: bytes, dest: str, rels: list[str]) -> list[str]:
    """A small upload through the session: ``printf`` of the tar's bytes into ``tar``, then the
    checksum command of each chunk of ``rels`` (judged only once the upload passed)."""
    q = shlex.quote(dest)
    return [f"mkdir -p -- {q} && printf {printf_literal(blob)} | tar -xzf - -C {q} --no-same-owner",
            *(checksum_command(dest, part) for part in _chunks(rels, 4))]


async def deploy(ctx: ActionContext, verdict: Verdict | None = None, *, ahead: Ahead | None = None) -> Verdict:
    """Deploy ``[deploy] source``; ``ahead``: its source read and its upload started while connect
    ran (:mod:`.deploy_ahead`), judged here as if run now."""
    cfg = ctx.cfg
    vb = VerdictBuilder(ctx, "deploy", DEPLOY_PLAN, verdict)
    source: Source | None = None
    async with vb.stage("source") as st:
        if cfg.deploy_source is None:
            st.skip("no [deploy] source configured: nothing to deploy")
            return vb.finish()
        if ahead is not None and ahead.error is not None:
            raise ahead.error
        source = ahead.source if ahead is not None and ahead.source is not None else read_source(cfg)
        ctx.manifest = source.manifest
        version = source.version
        ver = (version["git_commit"] or "")[:10] + ("+dirty" if version["dirty"] else "")
        skipped = [p.rel for p in source.tree.dangling]
        st.ok(f"{len(source.files)} files, {source.size / 1024:.1f} KiB" + (f", {ver}" if ver else "")
              + (f"; skipped {len(skipped)} dangling link(s): {', '.join(skipped[:3])}" if skipped else ""),
              code_version=version, files=len(source.files), dangling_links=skipped[:50])
    if vb.failed or source is None:
        return vb.finish()

    manifest = source.manifest
    dest = cfg.deploy.dest or cfg.job.workdir
    rels = sorted(manifest)
    checked: list[CommandResult] | None = None
    async with vb.stage("upload") as st:
        blob = ahead.blob if ahead is not None and ahead.blob is not None else _pack(source.files)
        t0 = time.monotonic()
        # one tar stream: its bytes are not counted as they go, so the bar is the time against the deadline
        vb.running("upload", f"{len(source.files)} files, {len(blob) / 1024:.1f} KiB packed, to {dest}", since=time.time(), deadline_s=300)
        q = shlex.quote(dest)
        unpack = f"tar -xzf - -C {q} --no-same-owner"
        if len(blob) <= SESSION_UPLOAD_MAX:
            # small: through the session, with the checksums (and the riders) in the same round trip:
            # no channel, no runtime exec; the checksums are judged only once the upload passed
            early = await ahead.take() if ahead is not None else None
            res, *checked = early if early is not None else await ctx.run_many(upload_batch(blob, dest, rels), timeout=300)
            res.command = f"mkdir -p -- {q} && printf <{len(blob)} bytes> | {unpack}"
        else:
            res = await ctx.transport.run_channel(f"mkdir -p -- {q} && {unpack}", input=blob, timeout=300)
        check(res, Layer.CONTAINER, f"unpacking into {dest}", advice="is there space left, and is tar installed in the target?")
        st.ok(f"{len(blob) / 1024:.1f} KiB packed to {dest} in {time.monotonic() - t0:.2f}s")
    if vb.failed:
        return vb.finish()

    async with vb.stage("checksums") as st:
        remote = await remote_checksums(ctx, dest, rels, checked)
        bad = [r for r in rels if remote.get(r) != manifest[r]]
        if bad:
            shown = ", ".join(r if r.isprintable() else repr(r) for r in bad[:5])
            raise StageFailed(Layer.CONTAINER, f"{len(bad)} of {len(rels)} files differ after upload: {shown}",
                              advice="disk full or a concurrent writer in the target?", data={"mismatched": bad[:50]})
        removed = await remove_stale(ctx, dest, manifest)  # what an earlier deploy sent, gone from the source
        names = ", ".join(r if r.isprintable() else repr(r) for r in removed[:5]) + (", …" if len(removed) > 5 else "")
        gone = f"; removed {len(removed)} file{'s' if len(removed) != 1 else ''} an earlier deploy sent that the source no longer holds: {names}"
        st.ok(f"all {len(rels)} files match (sha256)" + (gone if removed else ""), removed=removed[:50])
    return vb.finish()


def start_ahead(ctx: ActionContext, version: dict[str, Any] | None) -> Ahead | None:
    """Read the source and, when the tar is small, start the upload batch (with the riders) through
    the session; None when there is no source to deploy.  Call it while connect runs."""
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
