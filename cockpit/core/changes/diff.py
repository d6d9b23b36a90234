"""The diffing of :mod:`cockpit.core.changes`: per-file changes and git-style unified diff text
between two ``files`` maps of manifests, read through a :data:`Reader` (the store, or the disk).

Line counts are exact for every text file (``difflib`` without the autojunk heuristic); text
files over ``max_bytes`` get approximate counts and a one-line note; binary files (a NUL byte, or
not UTF-8) get ``binary, N bytes changed``.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Reader", "diff_files"]


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
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op in ("replace", "delete"):
            removed += i2 - i1
        if op in ("replace", "insert"):
            added += j2 - j1
    out: list[str] = []

    def line(prefix: str, s: str) -> None:
        if s.endswith("\n"):
            out.append(prefix + s)
        else:
            out.append(prefix + s + "\n")
            out.append("\\ No newline at end of file\n")

    for group in sm.get_grouped_opcodes(n):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_fmt_range(first[1], last[2] - first[1])} +{_fmt_range(first[3], last[4] - first[3])} @@\n")
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


def diff_files(old: Mapping[str, Any], new: Mapping[str, Any], read_old: Reader, read_new: Reader, *, max_bytes: int) -> tuple[list[dict[str, Any]], str]:
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
        if status == "modified" and a == b:  # both sides stored redacted: what changed was a secret
            ch["detail"] = "changed only in redacted text (a secret)"
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
