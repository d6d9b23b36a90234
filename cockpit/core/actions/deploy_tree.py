"""Which files a deploy sends: the source tree walked with ``[deploy] exclude``, symlinks resolved.

A symlink is never sent as a link (its target would be a path on this machine, dangling in the
target); it is **followed**, and what it points to is deployed under the link's name:

- a link that stays inside the source tree is followed (a file: its content; a directory: its
  files, under the link's path); a link into an excluded path is left out with it;
- a link that points outside the source tree is **refused** (:class:`LinkProblem`, the deploy
  fails in the ``config`` layer naming the link and the fix) unless ``[deploy] follow_symlinks =
  true``;
- a link that loops (to the source or a directory that holds it or the link, or a link cycle:
  ``ELOOP``) is refused whatever the setting, so a walk always ends;
- a dangling link (its target does not exist) has nothing to deploy: it is skipped and listed
  (editors leave such links as lock files: Emacs' ``.#name``).

File names are kept as the file system gives them (``str`` with ``surrogateescape`` for bytes
that are not UTF-8), so any name a file system allows is deployed and checked.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LinkProblem", "SourceTree", "collect_tree", "collect_files", "excluded", "excluded_path"]


def excluded(rel: str, name: str, patterns: list[str]) -> bool:
    """One path component against ``[deploy] exclude``: its name, its relative path, or a prefix."""
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p) or rel.startswith(p.rstrip("/") + "/") for p in patterns)


def excluded_path(rel: str, patterns: list[str]) -> bool:
    """``rel`` or one of its parent directories is excluded (what the walk would prune)."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    return any(excluded("/".join(parts[: i + 1]), parts[i], patterns) for i in range(len(parts)))


@dataclass(frozen=True)
class LinkProblem:
    """A symlink the deploy will not follow: ``kind`` is ``outside``, ``loop`` or ``dangling``."""

    rel: str
    target: str
    kind: str

    def describe(self) -> str:
        what = {
            "outside": "points outside the deploy source",
            "loop": "loops back on itself (a link to a directory that contains it, or a cycle of links)",
            "dangling": "points to nothing (its target does not exist)",
        }[self.kind]
        return f"{self.rel!r} -> {self.target!r} {what}"


@dataclass
class SourceTree:
    """What :func:`collect_tree` found: the files to deploy and the links it would not follow."""

    files: dict[str, Path] = field(default_factory=dict)
    problems: list[LinkProblem] = field(default_factory=list)

    @property
    def refused(self) -> list[LinkProblem]:
        """Problems that must stop a deploy (outside links, loops); dangling links are only skipped."""
        return [p for p in self.problems if p.kind != "dangling"]

    @property
    def dangling(self) -> list[LinkProblem]:
        return [p for p in self.problems if p.kind == "dangling"]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def collect_tree(source: Path, exclude: list[str], *, follow_symlinks: bool = False) -> SourceTree:
    """Walk ``source`` (sorted by name; see the module doc for symlinks)."""
    tree = SourceTree()
    if source.is_file():  # the configured source itself may be a link: the user named it
        tree.files[source.name] = source
        return tree
    root = os.path.realpath(source)
    try:
        st = os.stat(source)
    except OSError:
        return tree
    _walk(tree, str(source), "", root, [(st.st_dev, st.st_ino)], list(exclude), follow_symlinks)
    return tree


def _walk(tree: SourceTree, path: str, rel_root: str, root: str, chain: list[tuple[int, int]],
          exclude: list[str], follow: bool) -> None:
    """One directory; ``chain`` holds the (device, inode) of every directory above, so a link
    back to one of them is a loop, however it was reached."""
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        rel = f"{rel_root}/{e.name}" if rel_root else e.name
        if excluded(rel, e.name, exclude):
            continue
        try:
            if e.is_symlink():
                _link(tree, e, rel, root, chain, exclude, follow)
            elif e.is_dir(follow_symlinks=False):
                st = e.stat(follow_symlinks=False)
                key = (st.st_dev, st.st_ino)
                if key in chain:  # back at an ancestor (reached through a link outside, or a bind mount)
                    tree.problems.append(LinkProblem(rel, e.path, "loop"))
                else:
                    _walk(tree, e.path, rel, root, [*chain, key], exclude, follow)
            elif e.is_file(follow_symlinks=False):
                tree.files[rel] = Path(e.path)
        except OSError:
            continue  # vanished while walking: not there to deploy


def _link(tree: SourceTree, e: os.DirEntry[str], rel: str, root: str, chain: list[tuple[int, int]],
          exclude: list[str], follow: bool) -> None:
    target = os.readlink(e.path)
    try:
        st = os.stat(e.path)
    except OSError as err:
        tree.problems.append(LinkProblem(rel, target, "loop" if err.errno == errno.ELOOP else "dangling"))
        return
    real = os.path.realpath(e.path)
    if stat.S_ISDIR(st.st_mode) and _inside(root, real):  # the source itself, or a directory holding it
        tree.problems.append(LinkProblem(rel, target, "loop"))
        return
    if _inside(real, root):
        if excluded_path(os.path.relpath(real, root), exclude):
            return  # the exclude wins, whichever name reaches the content
    elif not follow:
        tree.problems.append(LinkProblem(rel, target, "outside"))
        return
    if stat.S_ISDIR(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if key in chain:
            tree.problems.append(LinkProblem(rel, target, "loop"))
            return
        _walk(tree, e.path, rel, root, [*chain, key], exclude, follow)
    elif stat.S_ISREG(st.st_mode):
        tree.files[rel] = Path(e.path)


def collect_files(source: Path, exclude: list[str], *, follow_symlinks: bool = False) -> dict[str, Path]:
    """Relative path → local file, for every file deployed (links followed as the module doc
    says; the links a deploy refuses are left out here)."""
    return collect_tree(source, exclude, follow_symlinks=follow_symlinks).files
