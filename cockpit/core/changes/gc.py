"""Garbage collection of the snapshot store: objects no manifest refers to.

Objects are written before the manifest that names them (deploy stores what it checksummed; a
snapshot writes its manifest last), so an object can be left unreferenced by a cockpit killed
in between, or when manifests are removed by hand.  :func:`collect` removes such objects once
they are older than ``min_age_s`` (a day: never one a running deploy is about to name), and
:func:`maybe_collect` does so at most once per ``every_s`` (a stamp file in ``objects/``), so
the attempt that calls it pays a directory walk once a day, not on every attempt.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .store import stored_sha

__all__ = ["collect", "maybe_collect", "referenced"]

STAMP = ".gc-stamp"


def referenced(journal_dir: str | os.PathLike[str]) -> set[str] | None:
    """Every object any manifest names; None when a manifest cannot be read (then nothing is removed)."""
    out: set[str] = set()
    mdir = Path(journal_dir) / "manifests"
    if not mdir.is_dir():
        return out
    for p in mdir.glob("attempt-*.json"):
        try:
            files = json.loads(p.read_text(encoding="utf-8")).get("files") or {}
        except (OSError, ValueError, AttributeError):
            return None
        for entry in files.values():
            for sha in {stored_sha(entry), entry.get("sha256")} if isinstance(entry, dict) else ():
                if sha:
                    out.add(sha)
    return out


def collect(journal_dir: str | os.PathLike[str], *, min_age_s: float = 86400.0, now: float | None = None) -> tuple[int, int]:
    """Remove unreferenced objects older than ``min_age_s``: (files removed, bytes freed)."""
    keep = referenced(journal_dir)
    odir = Path(journal_dir) / "objects"
    if keep is None or not odir.is_dir():
        return 0, 0
    now = time.time() if now is None else now
    removed = freed = 0
    for sub in odir.iterdir():
        if not sub.is_dir():
            continue
        for obj in sub.iterdir():
            if obj.name in keep or obj.name.startswith("."):
                continue
            try:
                st = obj.stat()
                if now - st.st_mtime < min_age_s:
                    continue
                obj.unlink()
            except OSError:
                continue
            removed, freed = removed + 1, freed + st.st_size
    return removed, freed


def maybe_collect(journal_dir: str | os.PathLike[str], *, every_s: float = 86400.0) -> tuple[int, int] | None:
    """:func:`collect` when the last one ran over ``every_s`` ago (None: not due)."""
    stamp = Path(journal_dir) / "objects" / STAMP
    try:
        if time.time() - stamp.stat().st_mtime < every_s:
            return None
    except OSError:
        pass
    if not stamp.parent.is_dir():
        return None
    result = collect(journal_dir)
    try:
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT, 0o600))  # the store's files are private (0600)
        os.utime(stamp)
    except OSError:
        return result
    return result
