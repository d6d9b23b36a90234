"""Files an earlier deploy sent that the source no longer holds: removed from the target.

Deploy unpacks the source over ``[deploy] dest`` and proves every file it sent arrived.  A file
deleted from the source stayed in the target: a fix that deletes a module (a stale patch a plugin
glob imports, a ``torch.py`` that shadows the real one) never landed, and the verdict judged the
old code.  After the checksums pass, the files the last snapshot of a deploy (the changes record,
:mod:`cockpit.core.changes`: relpath → sha256 of what that attempt deployed) holds and this
source does not are removed, each only while its content in the target is still exactly what
cockpit sent (its sha256 compared in the same command): a file the job wrote, or one edited in the
target, is never touched.  The stage names what it removed.  One round trip, only when there is a
candidate; a deploy with no journal, or no snapshot yet (the first attempt, a bare ``cockpit
deploy``), removes nothing.  The ``printf`` quoting of names every deploy command uses
(:func:`printf_literal`) lives here too.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

from ..changes.store import deployed_manifest, journal_dir_of, snapshot_ids
from .base import ActionContext

__all__ = ["MAX_STALE", "printf_literal", "stale_candidates", "remove_command", "remove_stale"]

#: bytes a printf format may hold as themselves inside single quotes (no ', \\, % or control byte)
_PRINTF_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+,=:@ ")
#: the most files removed in one deploy (more: the first ones, the rest on the next deploy)
MAX_STALE = 500


def printf_literal(data: bytes) -> str:
    """``data`` as a single-quoted ``printf`` format that prints exactly those bytes: safe bytes as
    themselves, every other one (quotes, backslash, %, newline, NUL, non-ASCII) as ``\\ooo``, and a
    leading ``-`` too (printf would read it as an option).  The result is plain ASCII."""
    out = "".join(chr(b) if b in _PRINTF_SAFE and not (i == 0 and b == 0x2D) else f"\\{b:03o}" for i, b in enumerate(data))
    return f"'{out}'"


def stale_candidates(ctx: ActionContext, manifest: Mapping[str, str]) -> dict[str, str]:
    """relpath → sha256 of what the latest deploy snapshot sent and ``manifest`` does not hold."""
    if ctx.journal is None:
        return {}
    jd = journal_dir_of(ctx.journal)
    ids = snapshot_ids(jd)
    last = deployed_manifest(jd, ids[-1]) if ids else None
    if not last:
        return {}
    return {rel: sha for rel, sha in sorted(last.items()) if rel not in manifest}


def _safe(rel: str) -> bool:
    """A relative path inside dest: no absolute path, no ``..`` part."""
    return bool(rel) and not rel.startswith("/") and ".." not in rel.split("/")


def remove_command(dest: str, stale: Mapping[str, str]) -> str:
    """POSIX ``sh``: each file removed while its sha256 is the one given; prints the removed names,
    NUL-separated (names made by printf, never words of the command)."""
    parts = [f"cd -- {shlex.quote(dest)} || exit 90"]
    for rel, sha in list(stale.items())[:MAX_STALE]:
        if len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha) or not _safe(rel):
            continue  # a record that is not a digest, or a path that would leave dest
        parts.append(f"f=$(printf {printf_literal(os.fsencode(rel) + b'x')}); f=${{f%x}}; "
                     f"if [ -f \"./$f\" ] && [ ! -L \"./$f\" ] && h=$(sha256sum < \"./$f\") && [ \"${{h%% *}}\" = {sha} ]; "
                     "then rm -f -- \"./$f\" && printf '%s\\0' \"$f\"; fi")
    return "; ".join(parts)


async def remove_stale(ctx: ActionContext, dest: str, manifest: Mapping[str, str]) -> list[str]:
    """Remove what an earlier deploy sent that the source no longer holds (see the module doc);
    the relative paths removed."""
    stale = stale_candidates(ctx, manifest)
    if not stale:
        return []
    res = await ctx.run(remove_command(dest, stale), timeout=60)
    return [os.fsdecode(p) for p in res.stdout.split(b"\0") if p]
