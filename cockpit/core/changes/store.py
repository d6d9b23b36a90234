"""The snapshot store of :mod:`cockpit.core.changes`: content-addressed objects and one manifest per attempt.

``objects/<sha[:2]>/<sha256>`` holds file contents (written once, verified on read);
``manifests/attempt-<N>.json`` lists what attempt N deployed (relpath → sha256, size, mode).

Secrets never reach the store: a text file in which the redactor finds one (a token pasted into
``train.py``) is stored redacted, under the hash of what is stored (``"object"``, with
``"redacted": true``), while ``"sha256"`` stays the hash of the deployed file (what deploy
checksummed).  Files are 0600 in 0700 directories.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..actions.deploy_tree import collect_files
from ..hashing import bytes_sha256
from ..journal.files import private_dir
from ..redact import Redactor

__all__ = [
    "snapshot", "load_manifest", "deployed_manifest", "previous_snapshot", "snapshot_ids", "object_path",
    "get_object", "atomic_write", "file_mode", "journal_dir_of", "stored_sha",
]

_MANIFEST = re.compile(r"^attempt-(\d+)\.json$")


def journal_dir_of(journal_or_dir: Any) -> Path:
    p = getattr(journal_or_dir, "path", None)
    if p is not None:
        return Path(p).parent
    return Path(journal_or_dir)


def object_path(journal_dir: str | os.PathLike[str], sha: str) -> Path:
    return Path(journal_dir) / "objects" / sha[:2] / sha


def stored_sha(entry: Mapping[str, Any] | None) -> str | None:
    """The object holding a manifest entry's content: its redacted copy, else the file itself."""
    e = entry or {}
    return e.get("object") or e.get("sha256")


def atomic_write(path: Path, data: bytes, *, fsync: bool = True, root: Path | None = None) -> None:
    """Write ``path`` whole or not at all, mode 0600; its directories below ``root`` (the journal's
    directory) are 0700."""
    private_dir(path.parent, root)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _put_object(journal_dir: Path, data: bytes, sha: str | None = None) -> str:
    sha = sha or bytes_sha256(data)
    p = object_path(journal_dir, sha)
    if not p.exists():
        # no fsync per object (thousands on a first snapshot): reads verify the hash instead
        atomic_write(p, data, fsync=False, root=Path(journal_dir))
    return sha


def get_object(journal_dir: Path, sha: str | None) -> bytes | None:
    """An object's bytes, or None when it is missing or damaged (its hash no longer matches)."""
    if not sha:
        return None
    try:
        data = object_path(journal_dir, sha).read_bytes()
    except OSError:
        return None
    return data if bytes_sha256(data) == sha else None


def file_mode(st_mode: int) -> str:
    return "100755" if st_mode & stat.S_IXUSR else "100644"


def _manifest_path(journal_dir: Path, attempt: int) -> Path:
    return journal_dir / "manifests" / f"attempt-{attempt}.json"


def snapshot(
    journal_dir: str | os.PathLike[str],
    attempt: int,
    source: str | os.PathLike[str],
    exclude: Iterable[str] = (),
    *,
    deployed: Mapping[str, str] | None = None,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    """Store the source as attempt ``attempt``'s snapshot; returns the manifest.

    ``redactor``: text files with a secret in them are stored redacted (see the module doc).

    ``deployed`` (relpath → sha256, what deploy checksummed: ``ctx.state["manifest"]``) makes it
    cheap and exact: a file whose object is already stored is not read again, and a file edited
    between the deploy and this call is noted in ``raced`` (its deployed content is then kept only
    if it was stored before).
    """
    jd = Path(journal_dir)
    src = Path(source)
    files = collect_files(src, list(exclude))
    for rel in deployed or {}:  # deployed through a link outside the source ([deploy] follow_symlinks)
        if rel not in files and (src / rel).is_file():
            files[rel] = src / rel
    out: dict[str, dict[str, Any]] = {}
    raced: list[str] = []
    for rel, p in files.items():
        rel = rel.replace(os.sep, "/")
        try:
            st = p.stat()
        except OSError:
            continue
        want = deployed.get(rel) if deployed else None
        if want and object_path(jd, want).exists():
            out[rel] = {"sha256": want, "size": object_path(jd, want).stat().st_size, "mode": file_mode(st.st_mode)}
            continue
        try:
            data = p.read_bytes()
        except OSError:
            continue
        sha = bytes_sha256(data)
        if want and want != sha:
            raced.append(rel)
            out[rel] = {"sha256": want, "size": None, "mode": file_mode(st.st_mode), "missing": True}
            continue
        hidden = redactor.file_bytes(data) if redactor is not None else data
        if hidden is not data:
            out[rel] = {"sha256": sha, "size": len(data), "mode": file_mode(st.st_mode), "object": _put_object(jd, hidden), "redacted": True}
            continue
        _put_object(jd, data, sha)
        out[rel] = {"sha256": sha, "size": len(data), "mode": file_mode(st.st_mode)}
    if deployed:  # deployed but vanished since (deleted right after the deploy)
        for rel, sha in deployed.items():
            if rel not in out:
                out[rel] = {"sha256": sha, "size": None, "mode": "100644", "missing": not object_path(jd, sha).exists()}
                raced.append(rel)
    manifest = {"attempt": attempt, "source": str(src), "created": time.time(), "files": dict(sorted(out.items())), "raced": sorted(set(raced))}
    atomic_write(_manifest_path(jd, attempt), json.dumps(manifest, indent=1, sort_keys=False).encode(), root=jd)
    return manifest


def load_manifest(journal_dir: str | os.PathLike[str], attempt: int) -> dict[str, Any] | None:
    try:
        data = json.loads(_manifest_path(Path(journal_dir), attempt).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else None


def deployed_manifest(journal_dir: str | os.PathLike[str], attempt: int) -> dict[str, str] | None:
    """relpath → sha256 of what attempt ``attempt`` deployed, or None when it has no snapshot."""
    m = load_manifest(journal_dir, attempt)
    if m is None:
        return None
    return {rel: e["sha256"] for rel, e in m["files"].items() if isinstance(e, dict) and e.get("sha256")}


def snapshot_ids(journal_dir: Path) -> list[int]:
    try:
        names = os.listdir(journal_dir / "manifests")
    except OSError:
        return []
    return sorted(int(m.group(1)) for m in map(_MANIFEST.match, names) if m)


def previous_snapshot(journal_dir: str | os.PathLike[str], attempt: int) -> tuple[int | None, dict[str, Any] | None]:
    """The most recent snapshot before ``attempt`` (the previous attempt that deployed)."""
    jd = Path(journal_dir)
    for aid in reversed(snapshot_ids(jd)):
        if aid < attempt:
            m = load_manifest(jd, aid)
            if m is not None:
                return aid, m
    return None, None
