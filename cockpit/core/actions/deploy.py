"""Deploy the local source into the target, then prove what arrived is what was sent.

The source is packed into one gzip'd tar in memory (``[deploy] exclude`` applied), streamed over
its own SSH channel into ``tar -xzf - -C DEST`` inside the target, and verified by comparing the
SHA-256 of every file there with a manifest computed locally.  A deploy that "worked" but left an
old file in place cannot pass.

The code version recorded with it is the git commit of the source plus a hash of uncommitted
changes (``git diff HEAD`` and untracked files), so two attempts of the same dirty tree have the
same version and two different edits never do.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import os
import shlex
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

from ..hashing import file_sha256 as _sha
from ..layers import Layer, Verdict
from .base import ActionContext, StageFailed, VerdictBuilder, check

__all__ = ["deploy", "collect_files", "code_version", "DEPLOY_PLAN"]

DEPLOY_PLAN = [("source", Layer.CONFIG), ("upload", Layer.CONTAINER), ("checksums", Layer.CONTAINER)]
CHUNK = 200


def _excluded(rel: str, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p) or rel.startswith(p.rstrip("/") + "/") for p in patterns)


def collect_files(source: Path, exclude: list[str]) -> dict[str, Path]:
    """Relative path → local file, for every file deployed (sorted, symlinks to files followed)."""
    if source.is_file():
        return {source.name: source}
    out: dict[str, Path] = {}
    for root, dirs, files in os.walk(source):
        rel_root = os.path.relpath(root, source)
        rel_root = "" if rel_root == "." else rel_root
        dirs[:] = sorted(d for d in dirs if not _excluded(os.path.join(rel_root, d), d, exclude))
        for f in sorted(files):
            rel = os.path.join(rel_root, f)
            p = Path(root) / f
            if not _excluded(rel, f, exclude) and p.is_file():
                out[rel] = p
    return out


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
                h.update(_sha(p).encode())
        info["dirty"] = True
        info["dirty_hash"] = h.hexdigest()[:12]
    return info


def _pack(files: dict[str, Path]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for rel, p in files.items():
            ti = tar.gettarinfo(str(p), arcname=rel)
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            with open(p, "rb") as fh:
                tar.addfile(ti, fh)
    return buf.getvalue()


async def deploy(ctx: ActionContext, verdict: Verdict | None = None) -> Verdict:
    cfg = ctx.cfg
    vb = VerdictBuilder(ctx, "deploy", DEPLOY_PLAN, verdict)
    files: dict[str, Path] = {}
    manifest: dict[str, str] = {}
    async with vb.stage("source") as st:
        src = cfg.deploy_source
        if src is None:
            st.skip("no [deploy] source configured: nothing to deploy")
            ctx.state["code_version"] = None
            return vb.finish()
        if not src.exists():
            raise StageFailed(Layer.CONFIG, f"deploy source {src} does not exist", advice="fix [deploy] source (relative to the config file)")
        files = collect_files(src, cfg.deploy.exclude)
        if not files:
            raise StageFailed(Layer.CONFIG, f"deploy source {src} has no files after exclude", advice="check [deploy] exclude")
        manifest = {rel: _sha(p) for rel, p in files.items()}
        ctx.state["code_version"] = version = code_version(src)
        ctx.state["manifest"] = manifest
        size = sum(p.stat().st_size for p in files.values())
        ver = (version["git_commit"] or "")[:10] + ("+dirty" if version["dirty"] else "")
        st.ok(f"{len(files)} files, {size / 1024:.1f} KiB" + (f", {ver}" if ver else ""), code_version=version, files=len(files))
    if vb.failed:
        return vb.finish()

    dest = cfg.deploy.dest or cfg.job.workdir
    async with vb.stage("upload") as st:
        blob = _pack(files)
        t0 = time.monotonic()
        res = await ctx.transport.run_channel(f"mkdir -p {shlex.quote(dest)} && tar -xzf - -C {shlex.quote(dest)} --no-same-owner", input=blob, timeout=300)
        check(res, Layer.CONTAINER, f"unpacking into {dest}", advice="is there space left, and is tar installed in the target?")
        st.ok(f"{len(blob) / 1024:.1f} KiB packed to {dest} in {time.monotonic() - t0:.2f}s")
    if vb.failed:
        return vb.finish()

    async with vb.stage("checksums") as st:
        remote: dict[str, str] = {}
        rels = sorted(manifest)
        for i in range(0, len(rels), CHUNK):
            part = rels[i : i + CHUNK]
            cmd = f"cd {shlex.quote(dest)} && sha256sum -- " + " ".join(shlex.quote(r) for r in part)
            res = await ctx.run(cmd, timeout=60)
            for line in res.text.splitlines():
                digest, _, name = line.partition("  ")
                remote[name.lstrip("*")] = digest
        bad = [r for r in rels if remote.get(r) != manifest[r]]
        if bad:
            raise StageFailed(Layer.CONTAINER, f"{len(bad)} of {len(rels)} files differ after upload: {', '.join(bad[:5])}",
                              advice="disk full or a concurrent writer in the target?", data={"mismatched": bad[:50]})
        st.ok(f"all {len(rels)} files match (sha256)")
    return vb.finish()
