"""What changed between attempts: a snapshot of the deployed source per attempt, and its diff.

Layout, next to the journal (``<journal dir>`` = the directory of ``journal.jsonl``)::

    objects/<sha[:2]>/<sha256>     file contents, content-addressed, written once (unchanged files
                                   cost nothing: the next attempt's manifest points at the same object)
    manifests/attempt-<N>.json     {"attempt", "source", "created", "files": {relpath: {"sha256", "size", "mode"}}}
    diffs/attempt-<N>.diff         unified diff of attempt N's deployed source against the previous
                                   attempt that deployed (git-style headers, ``a/`` → ``b/``)
    diffs/attempt-<N>.json         the per-file details returned by :func:`record_attempt_changes`

:func:`record_attempt_changes` is called right after deploy succeeds; it stores the snapshot,
diffs it against the most recent earlier snapshot, writes the diff file and appends a ``diff``
event to the journal (:meth:`Journal.record_diff`).  Line counts are exact for every text file
(``difflib`` without the autojunk heuristic); the unified diff text is written for text files up
to ``max_bytes`` (either side), larger ones get a one-line note; binary files (a NUL byte, or not
UTF-8) get ``binary, N bytes changed``.  The first snapshot has nothing to compare with: no diff
event is written for it.

Objects are never deleted here (a future ``gc`` may drop those no manifest references).
No textual/rich imports: ``cockpit.core`` is UI-free.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import stat
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

__all__ = [
    "record_attempt_changes",
    "snapshot",
    "load_manifest",
    "deployed_manifest",
    "previous_snapshot",
    "diff_manifests",
    "diff_source",
    "read_diff",
    "summarise",
    "object_path",
]

DEFAULT_MAX_BYTES = 200_000
_MANIFEST = re.compile(r"^attempt-(\d+)\.json$")


# --------------------------------------------------------------------------------------------
# the store
# --------------------------------------------------------------------------------------------


def _jdir(journal_or_dir: Any) -> Path:
    p = getattr(journal_or_dir, "path", None)
    if p is not None:
        return Path(p).parent
    return Path(journal_or_dir)


def object_path(journal_dir: str | os.PathLike[str], sha: str) -> Path:
    return Path(journal_dir) / "objects" / sha[:2] / sha


def _atomic_write(path: Path, data: bytes, *, fsync: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
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
    sha = sha or hashlib.sha256(data).hexdigest()
    p = object_path(journal_dir, sha)
    if not p.exists():
        # no fsync per object (thousands on a first snapshot): reads verify the hash instead
        _atomic_write(p, data, fsync=False)
    return sha


def _get_object(journal_dir: Path, sha: str | None) -> bytes | None:
    """An object's bytes, or None when it is missing or damaged (its hash no longer matches)."""
    if not sha:
        return None
    try:
        data = object_path(journal_dir, sha).read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == sha else None


def _mode(st_mode: int) -> str:
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
) -> dict[str, Any]:
    """Store the source as attempt ``attempt``'s snapshot; returns the manifest.

    ``deployed`` (relpath → sha256, what deploy checksummed: ``ctx.state["manifest"]``) makes it
    cheap and exact: a file whose object is already stored is not read again, and a file edited
    between the deploy and this call is noted in ``raced`` (its deployed content is then kept only
    if it was stored before).
    """
    from .actions.deploy import collect_files

    jd = Path(journal_dir)
    src = Path(source)
    files = collect_files(src, list(exclude))
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
            out[rel] = {"sha256": want, "size": object_path(jd, want).stat().st_size, "mode": _mode(st.st_mode)}
            continue
        try:
            data = p.read_bytes()
        except OSError:
            continue
        sha = hashlib.sha256(data).hexdigest()
        if want and want != sha:
            raced.append(rel)
            out[rel] = {"sha256": want, "size": None, "mode": _mode(st.st_mode), "missing": True}
            continue
        _put_object(jd, data, sha)
        out[rel] = {"sha256": sha, "size": len(data), "mode": _mode(st.st_mode)}
    if deployed:  # deployed but vanished since (deleted right after the deploy)
        for rel, sha in deployed.items():
            if rel not in out:
                out[rel] = {"sha256": sha, "size": None, "mode": "100644", "missing": not object_path(jd, sha).exists()}
                raced.append(rel)
    manifest = {"attempt": attempt, "source": str(src), "created": time.time(), "files": dict(sorted(out.items())), "raced": sorted(set(raced))}
    _atomic_write(_manifest_path(jd, attempt), json.dumps(manifest, indent=1, sort_keys=False).encode())
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


def _snapshot_ids(journal_dir: Path) -> list[int]:
    try:
        names = os.listdir(journal_dir / "manifests")
    except OSError:
        return []
    return sorted(int(m.group(1)) for m in map(_MANIFEST.match, names) if m)


def previous_snapshot(journal_dir: str | os.PathLike[str], attempt: int) -> tuple[int | None, dict[str, Any] | None]:
    """The most recent snapshot before ``attempt`` (the previous attempt that deployed)."""
    jd = Path(journal_dir)
    for aid in reversed(_snapshot_ids(jd)):
        if aid < attempt:
            m = load_manifest(jd, aid)
            if m is not None:
                return aid, m
    return None, None


# --------------------------------------------------------------------------------------------
# diffing
# --------------------------------------------------------------------------------------------


def _is_binary(data: bytes) -> bool:
    if b"\0" in data[:8192]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _lines(data: bytes) -> list[str]:
    """Lines split on \\n only (like git), each keeping its newline; the last may lack one."""
    text = data.decode("utf-8")
    if not text:
        return []
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _bytes_changed(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    diff = 0
    for i in range(0, n, 1 << 16):
        end = min(i + (1 << 16), n)
        x, y = a[i:end], b[i:end]
        if x != y:
            z = (int.from_bytes(x, "big") ^ int.from_bytes(y, "big")).to_bytes(len(x), "big")
            diff += len(x) - z.count(0)
    return diff + abs(len(a) - len(b))


def _fmt_range(start: int, length: int) -> str:
    beginning = start + 1 if length else start
    return f"{beginning}" if length == 1 else f"{beginning},{length}"


def _hunks(a: list[str], b: list[str], n: int = 3) -> tuple[list[str], int, int]:
    """Unified-diff hunks (no file header) and exact (+added, −removed) line counts."""
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    added = removed = 0
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    out: list[str] = []

    def line(prefix: str, s: str) -> None:
        if s.endswith("\n"):
            out.append(prefix + s)
        else:
            out.append(prefix + s + "\n")
            out.append("\\ No newline at end of file\n")

    for group in sm.get_grouped_opcodes(n):
        f, l = group[0], group[-1]
        out.append(f"@@ -{_fmt_range(f[1], l[2] - f[1])} +{_fmt_range(f[3], l[4] - f[3])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for s in a[i1:i2]:
                    line(" ", s)
                continue
            for s in a[i1:i2]:
                line("-", s)
            for s in b[j1:j2]:
                line("+", s)
    return out, added, removed


def _approx_counts(a: list[str], b: list[str]) -> tuple[int, int]:
    ca, cb = Counter(a), Counter(b)
    return sum((cb - ca).values()), sum((ca - cb).values())


Reader = Callable[[str, Mapping[str, Any] | None], "bytes | None"]


def _diff(old: Mapping[str, Any], new: Mapping[str, Any], read_old: Reader, read_new: Reader, *, max_bytes: int) -> tuple[list[dict[str, Any]], str]:
    """Per-file changes and the unified diff text between two ``files`` maps of manifests."""
    changes: list[dict[str, Any]] = []
    text: list[str] = []
    for rel in sorted(set(old) | set(new)):
        eo, en = old.get(rel), new.get(rel)
        so, sn = (eo or {}).get("sha256"), (en or {}).get("sha256")
        mo, mn = (eo or {}).get("mode"), (en or {}).get("mode")
        if eo and en and so == sn and mo == mn:
            continue
        status = "added" if eo is None else "removed" if en is None else ("modified" if so != sn else "mode")
        a = read_old(rel, eo) if eo is not None else b""
        b = read_new(rel, en) if en is not None else b""
        ch: dict[str, Any] = {"path": rel, "status": status, "added": 0, "removed": 0, "binary": False,
                              "size_before": len(a) if a is not None and eo else None, "size_after": len(b) if b is not None and en else None}
        head = [f"diff --git a/{rel} b/{rel}\n"]
        if status == "added":
            head.append(f"new file mode {mn}\n")
        elif status == "removed":
            head.append(f"deleted file mode {mo}\n")
        elif mo != mn:
            head += [f"old mode {mo}\n", f"new mode {mn}\n"]
        if status == "mode":
            ch["detail"] = f"mode {mo} → {mn}"
            changes.append(ch)
            text += head
            continue
        if a is None or b is None:
            ch["detail"] = "content not captured (the file changed between deploy and snapshot, or the object store lost it)"
            ch["added"] = ch["removed"] = None
            changes.append(ch)
            text += head + [f"# {ch['detail']}\n"]
            continue
        from_name = "/dev/null" if status == "added" else f"a/{rel}"
        to_name = "/dev/null" if status == "removed" else f"b/{rel}"
        if _is_binary(a) or _is_binary(b):
            n = _bytes_changed(a, b)
            ch["binary"] = True
            ch["detail"] = f"binary, {n} byte{'s' if n != 1 else ''} changed ({len(a)} → {len(b)} bytes)"
            text += head + [f"Binary files {from_name} and {to_name} differ ({ch['detail']})\n"]
            changes.append(ch)
            continue
        la, lb = _lines(a), _lines(b)
        if len(a) > max_bytes or len(b) > max_bytes:
            ch["added"], ch["removed"] = _approx_counts(la, lb)
            ch["detail"] = f"text, too large for a diff ({len(a)} → {len(b)} bytes, limit {max_bytes})"
            ch["truncated"] = True
            text += head + [f"--- {from_name}\n", f"+++ {to_name}\n", f"# {ch['detail']}: +{ch['added']} −{ch['removed']} lines\n"]
            changes.append(ch)
            continue
        hunks, added, removed = _hunks(la, lb)
        ch["added"], ch["removed"] = added, removed
        text += head + [f"--- {from_name}\n", f"+++ {to_name}\n"] + hunks
        changes.append(ch)
    return changes, "".join(text)


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
        return _get_object(jd, (e or {}).get("sha256"))

    changes, text = _diff(old.get("files", {}), new.get("files", {}), read, read, max_bytes=max_bytes)
    return _result(_opt_int(new.get("attempt")), _opt_int(old.get("attempt")), changes, len(new.get("files", {}))), text


def diff_source(journal_dir: str | os.PathLike[str], source: str | os.PathLike[str], exclude: Iterable[str] = (), *,
                max_bytes: int = DEFAULT_MAX_BYTES, base_attempt: int | None = None) -> tuple[dict[str, Any], str]:
    """The working source against the last snapshot (or ``base_attempt``'s), without storing
    anything: "what the next attempt would deploy".  ``base`` is None when there is no snapshot."""
    from .actions.deploy import collect_files

    jd = Path(journal_dir)
    if base_attempt is not None:
        base_id, base = base_attempt, load_manifest(jd, base_attempt)
    else:
        ids = _snapshot_ids(jd)
        base_id, base = (ids[-1], load_manifest(jd, ids[-1])) if ids else (None, None)
    files = collect_files(Path(source), list(exclude))
    cur: dict[str, dict[str, Any]] = {}
    for rel, p in files.items():
        try:
            st = p.stat()
            data = p.read_bytes()
        except OSError:
            continue
        cur[rel.replace(os.sep, "/")] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "mode": _mode(st.st_mode), "_path": str(p)}

    def read_old(rel: str, e: Mapping[str, Any] | None) -> bytes | None:
        return _get_object(jd, (e or {}).get("sha256"))

    def read_new(rel: str, e: Mapping[str, Any] | None) -> bytes | None:
        try:
            return Path((e or {})["_path"]).read_bytes()
        except (OSError, KeyError):
            return None

    changes, text = _diff((base or {}).get("files", {}), cur, read_old, read_new, max_bytes=max_bytes)
    d = _result(None, base_id if base is not None else None, changes, len(cur))
    return d, text


def record_attempt_changes(
    journal: Any,
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
    because its diff could not be written).
    """
    jd = _jdir(journal)
    try:
        base_id, base = previous_snapshot(jd, attempt_id)
        man = snapshot(jd, attempt_id, source, exclude, deployed=deployed)
        if base is None:
            d = _result(attempt_id, None, [], len(man["files"]))
            d["first"] = True
        else:
            d, text = diff_manifests(jd, base, man, max_bytes=max_bytes)
            d["base"] = base_id
            if d["files"]:
                path = jd / "diffs" / f"attempt-{attempt_id}.diff"
                hdr = f"# cockpit: attempt {attempt_id} against attempt {base_id} ({summarise(d)})\n"
                _atomic_write(path, (hdr + text).encode("utf-8", "surrogateescape"))
                d["diff_path"] = str(path)
            _atomic_write(jd / "diffs" / f"attempt-{attempt_id}.json", json.dumps(d, indent=1).encode())
            journal.record_diff(attempt_id, d["files"], d["added"], d["removed"], d["diff_path"])
        d["raced"] = man.get("raced", [])
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
