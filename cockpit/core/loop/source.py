"""Which files of the deploy source count for attempt-on-save, and their content signatures.

The rules: the same ``[deploy] exclude`` semantics as
:func:`~cockpit.core.actions.deploy.collect_files` (fnmatch on the name, the relative path, or a
directory prefix, at every level), minus what ``.gitignore`` ignores when the source is in a git
work tree (``git check-ignore --stdin``, one call per batch of events), minus editor noise (swap
files, ``*~``, ``.#*``, ``__pycache__``, ``.git``…, the same lists as watchfiles'
``DefaultFilter``), minus cockpit's own output directories (``ignore_paths``).  A file's
signature is its SHA-256, or a stat signature above ``hash_limit`` bytes.

:class:`SourceFiles` applies them to one source; :class:`~.watcher.SourceWatcher` owns one.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Collection, Iterable
from pathlib import Path

from ..actions.deploy import _excluded
from ..hashing import file_sha256

__all__ = ["NOISE_DIRS", "is_excluded", "is_editor_noise", "SourceFiles"]

#: watchfiles' DefaultFilter lists: editor and tool noise nobody means to deploy-and-run.
NOISE_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".tox", ".venv", ".idea", "node_modules",
                        ".mypy_cache", ".pytest_cache", ".hypothesis"})
_NOISE_NAME = re.compile(r"\.py[cod]$|\.___jb_...___$|\.sw.$|~$|^\.#|^\.DS_Store$|^flycheck_")


def is_excluded(rel: str, patterns: Iterable[str]) -> bool:
    """True when ``collect_files`` would not deploy ``rel`` (a file path relative to the source).

    ``collect_files`` prunes a directory whose relative path or name matches, then tests each
    file; this applies the same test (one rule for what is deployed and what is watched) to every
    prefix of ``rel``.
    """
    pats = list(patterns)
    if not pats:
        return False
    parts = [p for p in rel.replace(os.sep, "/").split("/") if p not in ("", ".")]
    for i in range(len(parts)):
        if _excluded("/".join(parts[: i + 1]), parts[i], pats):
            return True
    return False


def is_editor_noise(rel: str) -> bool:
    parts = rel.replace(os.sep, "/").split("/")
    return any(p in NOISE_DIRS for p in parts[:-1]) or parts[-1] in NOISE_DIRS or bool(_NOISE_NAME.search(parts[-1]))


def _abs(p: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(os.path.expanduser(os.fspath(p))))


class SourceFiles:
    """The filter and the signatures for one deploy source (a directory or a single file).

    :meth:`locate` (once the source exists) settles the watched root; :meth:`find_git` and
    :meth:`walk` run in a thread (they call git and read the disk).  ``stats`` is shared with the
    watcher: this counts ``git_calls``.
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        exclude: Iterable[str] = (),
        *,
        gitignore: bool = True,
        ignore_editor_files: bool = True,
        hash_limit: int = 64 << 20,
        ignore_paths: Iterable[str | os.PathLike[str]] = (),
        stats: dict[str, int] | None = None,
    ) -> None:
        self.source = _abs(source)
        self.exclude = list(exclude)
        self.use_gitignore = gitignore
        self.ignore_editor_files = ignore_editor_files
        self.hash_limit = hash_limit
        self.ignore_paths = [_abs(p) for p in ignore_paths]
        self.stats = stats if stats is not None else {"git_calls": 0}
        self.single: str | None = None  # file name when the source is a single file
        self.root = self.source
        self.git_dir: str | None = None  # work tree top when .gitignore applies
        self._roots: tuple[str, ...] = ()
        self._ignore_rels: tuple[str, ...] = ()

    def locate(self) -> None:
        """Settle the root to watch (the parent of a single-file source) and the ignored prefixes."""
        if self.source.is_file():
            self.single, self.root = self.source.name, self.source.parent
        self._roots = tuple(dict.fromkeys([str(self.root), os.path.realpath(self.root)]))
        # only paths strictly inside the source: ignoring an ancestor would ignore everything
        self._ignore_rels = tuple(r for r in (self.rel(str(p)) for p in self.ignore_paths) if r)

    def _git(self, args: list[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes] | None:
        try:
            return subprocess.run(["git", *args], cwd=self.root, input=stdin, capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None

    def find_git(self) -> None:
        """Find the git work tree whose .gitignore applies (none for a git-ignored source)."""
        if not self.use_gitignore:
            return
        r = self._git(["rev-parse", "--show-toplevel"])
        if r is not None and r.returncode == 0 and r.stdout.strip():
            self.git_dir = r.stdout.decode("utf-8", "replace").strip()
            # a source that is itself git-ignored (a build output) is watched without .gitignore
            probe = self.single or "."
            r2 = self._git(["check-ignore", "-q", "--", probe])
            if r2 is not None and r2.returncode == 0:
                self.git_dir = None

    def _walk_from(self, top: str) -> Iterable[str]:
        for root, dirs, files in os.walk(top):
            rel_root = os.path.relpath(root, self.root)
            rel_root = "" if rel_root == "." else rel_root
            dirs[:] = sorted(d for d in dirs if self.static_ok(os.path.join(rel_root, d), is_dir=True))
            yield from (os.path.join(rel_root, f) for f in files)

    def walk(self) -> list[str]:
        """Every file under the source that passes the static filter (relative paths)."""
        return [self.single] if self.single else list(self._walk_from(str(self.root)))

    def static_ok(self, rel: str, *, is_dir: bool = False) -> bool:
        rel = rel.replace(os.sep, "/")
        if self.single:
            return rel == self.single
        if ".git" in rel.split("/"):
            return False
        if any(rel == r or rel.startswith(r + "/") for r in self._ignore_rels):
            return False
        if self.ignore_editor_files and (is_editor_noise(rel) or (is_dir and rel.split("/")[-1] in NOISE_DIRS)):
            return False
        return not is_excluded(rel, self.exclude)

    def git_ignored(self, rels: list[str]) -> set[str]:
        if not self.git_dir or not rels:
            return set()
        self.stats["git_calls"] = self.stats.get("git_calls", 0) + 1
        r = self._git(["check-ignore", "--stdin", "-z"], stdin=b"".join(r.encode() + b"\0" for r in rels))
        if r is None or r.returncode not in (0, 1):
            return set()
        return {p.decode("utf-8", "surrogateescape") for p in r.stdout.split(b"\0") if p}

    def sig(self, rel: str) -> str | None:
        """The content signature of ``rel``, or None when it is not a readable file."""
        p = os.path.join(self.root, rel)
        try:
            st = os.stat(p)
            if not os.path.isfile(p):
                return None
            if st.st_size > self.hash_limit:
                return f"stat:{st.st_size}:{st.st_mtime_ns}"
            return file_sha256(p)
        except OSError:
            return None

    def classify(self, rels: Iterable[str]) -> tuple[dict[str, str | None], int]:
        """Filter (static, then .gitignore) and hash; returns ({rel: sig or None}, ignored)."""
        cand = sorted({r.replace(os.sep, "/") for r in rels})
        ok = [r for r in cand if self.static_ok(r)]
        ignored = self.git_ignored(ok)
        keep = [r for r in ok if r not in ignored]
        return {r: self.sig(r) for r in keep}, len(cand) - len(keep)

    def rel(self, path: str) -> str | None:
        """``path`` relative to the root ("" for the root), or None when it lies outside."""
        for root in self._roots:
            rel = os.path.relpath(path, root)
            if not rel.startswith(".."):
                return "" if rel == "." else rel
        return None

    def expand(self, raw: Iterable[str], known: Collection[str]) -> set[str]:
        """Event paths → file relpaths (a directory created or moved in: its files; one deleted
        or moved away: the ``known`` files under it)."""
        out: set[str] = set()
        for rel in raw:
            if not rel:
                continue
            p = os.path.join(self.root, rel)
            if os.path.isdir(p) and not self.single:
                if self.static_ok(rel, is_dir=True):
                    out.update(self._walk_from(p))
            else:
                out.add(rel)
                if not os.path.exists(p):
                    prefix = rel.replace(os.sep, "/") + "/"
                    out.update(k for k in known if k.startswith(prefix))
        return out
