"""Paths inside the target: normalised as a shell uses them, and the rules clear-cache obeys.

Pure functions with no I/O.  They are the *first line*: the config checks them when it loads (a
bad ``[cache] paths`` entry is a config error naming the key) and clear-cache checks them again
before it asks the target anything.  Text cannot see symlinks (``/x/link/proj`` may be the workdir
``/x/real/proj``), so the *authority* is the target itself: :mod:`cockpit.core.actions.cache_guard`
resolves every path there and applies these same rules (the data below) to the resolved paths, in
the same shell command that removes.

The rules, for a cache path ``C`` (text here, resolved on the target):

* ``/``, and the exact top-level directories in :data:`SYSTEM_DIRS` (``/tmp``, ``/opt``, ``/var``…);
* :data:`SYSTEM_TREES`: ``C`` is one of them, lies inside one, or contains one (``/var`` holds
  ``/var/lib``), except caches strictly below ``/dev/shm`` and ``/run/user/UID``;
* homes (``/root``, ``/home/NAME``, the target user's ``$HOME``): ``C`` is one, contains one, or is
  one of a home's own entries (``~/.ssh``, ``~/.cache``: they hold more than caches).  Deeper paths
  stay allowed: ``~/.triton/cache`` and ``~/.cache/torch_extensions`` are where real caches live;
* the job's workdir and the deploy dest: ``C`` is one or contains one.  A cache *inside* them stays
  allowed (``/workspace/.inductor`` is a common choice): removing it leaves the directory whole.
"""

from __future__ import annotations

__all__ = ["norm_remote_path", "inside", "check_cache_path", "SYSTEM_DIRS", "SYSTEM_TREES", "TREE_EXCEPTIONS",
           "RULE_TEXT"]

#: exact directories clear-cache never removes (what lies below some of them, like /tmp, is fine)
SYSTEM_DIRS = ("/", "/root", "/home", "/tmp", "/usr", "/etc", "/var", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt",
               "/proc", "/sys", "/dev", "/boot", "/run", "/srv", "/mnt", "/media", "/snap", "/usr/lib", "/usr/local",
               "/usr/bin", "/usr/sbin", "/usr/share", "/usr/include", "/var/lib", "/var/log", "/var/cache", "/var/tmp",
               "/var/run", "/var/spool", "/workspace")
#: never these, anything below them, nor anything holding them; ``/lib*`` is every top-level lib dir
SYSTEM_TREES = ("/usr", "/lib*", "/bin", "/sbin", "/etc", "/var/lib", "/boot", "/proc", "/sys", "/dev", "/run")
#: shell patterns of the caches allowed inside a system tree (strictly below these directories)
TREE_EXCEPTIONS = ("/dev/shm/?*", "/run/user/?*/?*")

#: each rule's words, as the refusal says them (the target-side guard prints the rule's key)
RULE_TEXT = {
    "root": "system directory",
    "system": "system directory",
    "tree": "kernel, device and system trees",
    "home": "home directories",
    "home-entry": "home directories",
    "workdir": "what the job needs",
    "dest": "what the job needs",
    "symlink": "no symlinks",
    "unresolved": "judged as the target resolves it",
}


def norm_remote_path(p: str) -> str:
    """``/a/./b/`` → ``/a/b``: the path as a shell will use it (no ``.``, no trailing slash)."""
    parts = [x for x in p.split("/") if x and x != "."]
    return "/" + "/".join(parts)


def inside(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it (both normalised)."""
    p, r = norm_remote_path(path), norm_remote_path(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


def _in_tree(norm: str, tree: str) -> bool:
    if tree == "/lib*":
        return norm.split("/")[1].startswith("lib")
    return inside(norm, tree)


def _excepted(norm: str) -> bool:
    parts = norm.strip("/").split("/")
    return (parts[:2] == ["dev", "shm"] and len(parts) >= 3) or (parts[:2] == ["run", "user"] and len(parts) >= 4)


def check_cache_path(p: str, protect: tuple[str, ...] = ()) -> str | None:
    """Why ``p`` must not be removed by clear-cache, or None when it is acceptable (by its text).

    The path is judged normalised (``/home/./someone`` is a home directory, ``/x/`` is ``/x``);
    ``protect`` are directories that must survive (the job's workdir, the deploy dest): a cache
    that is one of them or contains one is refused too."""
    if not p or not p.strip():
        return "is empty"
    if not p.startswith("/"):
        return "must be an absolute path inside the target"
    if ".." in p.split("/"):
        return "contains '..'"
    if any(ch in p for ch in "*?[]"):
        return "contains a glob character; list each directory explicitly"
    norm = norm_remote_path(p)
    parts = norm.strip("/").split("/")
    if norm == "/":
        return "is / itself: clearing it would destroy the system (rule: system directory)"
    if norm in SYSTEM_DIRS:
        return f"is {norm} itself: clearing it would destroy the system (rule: system directory)"
    if norm == "/root" or (len(parts) == 2 and parts[0] == "home"):
        return f"is a home directory ({norm}) itself (rule: home directories)"
    if parts[0] == "root" and len(parts) == 2 or parts[0] == "home" and len(parts) == 3:
        return (f"is {norm}, one of a home directory's own entries: it holds more than caches; list the cache "
                "directory below it (rule: home directories)")
    for tree in SYSTEM_TREES:
        if _in_tree(norm, tree) and not _excepted(norm):
            return (f"is inside {tree} (rule: kernel, device and system trees: /usr, /lib*, /bin, /sbin, /etc, /var/lib, /boot, "
                    "/proc, /sys, /dev, /run; only /dev/shm/… and /run/user/UID/… caches are allowed)")
        if tree != "/lib*" and inside(tree, norm):
            return f"contains {tree} (rule: kernel, device and system trees)"
    for d in protect:
        if not d:
            continue
        nd = norm_remote_path(d)
        if inside(nd, norm):
            return f"{'is' if nd == norm else 'contains'} {nd}, the job's workdir or deploy dest (rule: what the job needs)"
    return None
