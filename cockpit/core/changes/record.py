"""The entry points of :mod:`cockpit.core.changes`: record an attempt's changes, diff snapshots or
the working source, read a written diff back, and say it in one line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..actions.deploy_tree import collect_files
from ..hashing import bytes_sha256
from .diff import diff_files
from .store import atomic_write, file_mode, get_object, journal_dir_of, load_manifest, previous_snapshot, snapshot, snapshot_ids, stored_sha

if TYPE_CHECKING:
    from ..journal.store import Journal
    from ..redact import Redactor

__all__ = ["record_attempt_changes", "diff_manifests", "diff_source", "read_diff", "summarise", "DEFAULT_MAX_BYTES"]

DEFAULT_MAX_BYTES = 200_000


def _result(attempt: int | None, base: int | None, changes: list[dict[str, Any]], total: int) -> dict[str, Any]:
    d: dict[str, Any] = {
        "attempt": attempt,
        "base": base,
        "files": [c["path"] for c in changes],
        "added": sum(c["added"] or 0 for c in changes),
        "removed": sum(c["removed"] or 0 for c in changes),
        "changes": changes,
        "total_files": total,
        "diff_path": None,
    }
    return d


def diff_manifests(journal_dir: str | os.PathLike[str], old: Mapping[str, Any], new: Mapping[str, Any], *,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[dict[str, Any], str]:
    """Diff two stored snapshots (manifests as :func:`load_manifest` returns them): (details, diff text)."""
    jd = Path(journal_dir)

    def read(rel: str, e: Mapping[str, Any] | None) -> bytes | None:
        return get_object(jd, stored_sha(e))

    changes, text = diff_files(old.get("files", {}), new.get("files", {}), read, read, max_bytes=max_bytes)
    return _result(_opt_int(new.get("attempt")), _opt_int(old.get("attempt")), changes, len(new.get("files", {}))), text


def diff_source(journal_dir: str | os.PathLike[str], source: str | os.PathLike[str], exclude: Iterable[str] = (), *,
                max_bytes: int = DEFAULT_MAX_BYTES, base_attempt: int | None = None,
                follow_symlinks: bool = False, redactor: Redactor | None = None) -> tuple[dict[str, Any], str]:
    """The working source against the last snapshot (or ``base_attempt``'s), without storing
    anything: "what the next attempt would deploy" (``follow_symlinks``: as ``[deploy]
    follow_symlinks``).  ``base`` is None when there is no snapshot.  With ``redactor`` the
    working files are redacted as the snapshots are."""
    jd = Path(journal_dir)
    base_id: int | None
    if base_attempt is not None:
        base_id, base = base_attempt, load_manifest(jd, base_attempt)
    else:
        ids = snapshot_ids(jd)
        base_id, base = (ids[-1], load_manifest(jd, ids[-1])) if ids else (None, None)
    files = collect_files(Path(source), list(exclude), follow_symlinks=follow_symlinks)
    cur: dict[str, dict[str, Any]] = {}
    for rel, p in files.items():
        try:
            st = p.stat()
            data = p.read_bytes()
        except OSError:
            continue
        cur[rel.replace(os.sep, "/")] = {"sha256": bytes_sha256(data), "size": len(data), "mode": file_mode(st.st_mode), "_path": str(p)}

    def read_old(rel: str, e: Mapping[str, Any] | None) -> bytes | None:
        return get_object(jd, stored_sha(e))

    def read_new(rel: str, e: Mapping[str, Any] | None) -> bytes | None:
        try:
            data = Path((e or {})["_path"]).read_bytes()
        except (OSError, KeyError):
            return None
        return redactor.file_bytes(data) if redactor is not None else data

    changes, text = diff_files((base or {}).get("files", {}), cur, read_old, read_new, max_bytes=max_bytes)
    d = _result(None, base_id if base is not None else None, changes, len(cur))
    return d, text


def record_attempt_changes(
    journal: Journal,
    attempt_id: int,
    source: str | os.PathLike[str],
    exclude: Iterable[str] = (),
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    deployed: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Snapshot what attempt ``attempt_id`` deployed, diff it against the previous snapshot, write
    ``diffs/attempt-<N>.diff`` and journal a ``diff`` event.  Call right after deploy succeeds.

    Returns the details: ``attempt``, ``base`` (previous attempt id, None for the first
    snapshot), ``files``, ``added``, ``removed``, ``changes`` (per file: ``path``, ``status``,
    ``added``, ``removed``, ``binary``, ``detail``…), ``diff_path``, ``summary``, ``raced``.
    Never raises on I/O trouble: the dict then carries ``error`` (an attempt must not fail
    because its diff could not be written).  The journal's redactor keeps secrets out of the
    snapshot and so out of the diff.
    """
    jd = journal_dir_of(journal)
    try:
        base_id, base = previous_snapshot(jd, attempt_id)
        man = snapshot(jd, attempt_id, source, exclude, deployed=deployed, redactor=getattr(journal, "redactor", None))
        if base is None:
            d = _result(attempt_id, None, [], len(man["files"]))
            d["first"] = True
        else:
            d, text = diff_manifests(jd, base, man, max_bytes=max_bytes)
            d["base"] = base_id
            if d["files"]:
                path = jd / "diffs" / f"attempt-{attempt_id}.diff"
                hdr = f"# cockpit: attempt {attempt_id} against attempt {base_id} ({summarise(d)})\n"
                atomic_write(path, (hdr + text).encode("utf-8", "surrogateescape"), root=jd)
                d["diff_path"] = str(path)
            atomic_write(jd / "diffs" / f"attempt-{attempt_id}.json", json.dumps(d, indent=1).encode(), root=jd)
            journal.record_diff(attempt_id, d["files"], d["added"], d["removed"], d["diff_path"])
        d["raced"] = man.get("raced", [])
        from .gc import maybe_collect  # noqa: PLC0415 - once a day: objects nothing names any more

        maybe_collect(jd)
    except OSError as e:
        d = {"attempt": attempt_id, "base": None, "files": [], "added": 0, "removed": 0, "changes": [], "diff_path": None,
             "error": f"could not record the changes: {e}"}
    d["summary"] = summarise(d)
    return d


def read_diff(journal_dir: str | os.PathLike[str], attempt: int) -> str | None:
    """The unified diff written for ``attempt`` (None when there is none)."""
    try:
        return (Path(journal_dir) / "diffs" / f"attempt-{attempt}.diff").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def summarise(d: Mapping[str, Any] | None, *, limit: int = 4) -> str:
    """One line: ``"2 files, +5 −1: train.py, drafter.py"``."""
    if not d:
        return "no diff"
    if d.get("error"):
        return str(d["error"])
    files = list(d.get("files") or [])
    if d.get("first"):
        n = d.get("total_files")
        return f"first snapshot ({n} file{'s' if n != 1 else ''}): nothing earlier to compare with"
    if not files:
        base = d.get("base")
        return "no changes" + (f" since attempt {base}" if base is not None else "")
    names = files[:limit]
    more = f", … {len(files) - limit} more" if len(files) > limit else ""
    n = len(files)
    return f"{n} file{'s' if n != 1 else ''}, +{d.get('added', 0)} −{d.get('removed', 0)}: {', '.join(names)}{more}"


def _opt_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None
