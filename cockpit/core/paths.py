"""Paths inside the target: normalised as a shell uses them, and the rules clear-cache obeys.

Pure functions with no I/O: the config checks them when it loads (a bad ``[cache] paths`` entry
is a config error naming the key) and clear-cache checks them again, with the job's workdir and
deploy dest, before it removes anything.
"""

from __future__ import annotations

__all__ = ["norm_remote_path", "inside", "check_cache_path"]

_FORBIDDEN_CACHE = {"/", "/root", "/home", "/tmp", "/usr", "/etc", "/var", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt",
                    "/proc", "/sys", "/dev", "/boot", "/run", "/srv", "/mnt", "/media", "/snap", "/usr/lib", "/usr/local",
                    "/usr/bin", "/usr/sbin", "/usr/share", "/usr/include", "/var/lib", "/var/log", "/var/cache", "/var/tmp",
                    "/var/run", "/var/spool", "/workspace"}
#: never anything below these: the kernel's and the devices' own trees
_FORBIDDEN_TREES = ("/proc", "/sys", "/dev", "/run", "/boot", "/etc")


def norm_remote_path(p: str) -> str:
    """``/a/./b/`` → ``/a/b``: the path as a shell will use it (no ``.``, no trailing slash)."""
    parts = [x for x in p.split("/") if x and x != "."]
    return "/" + "/".join(parts)


def inside(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it (both normalised)."""
    p, r = norm_remote_path(path), norm_remote_path(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


def check_cache_path(p: str, protect: tuple[str, ...] = ()) -> str | None:
    """Why ``p`` must not be removed by clear-cache, or None when it is acceptable.

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
    if norm in _FORBIDDEN_CACHE:
        return f"is {norm} itself: clearing it would destroy the system (rule: system directory)"
    if any(norm.startswith(t + "/") for t in _FORBIDDEN_TREES):
        return f"is inside {next(t for t in _FORBIDDEN_TREES if norm.startswith(t + '/'))} (rule: kernel, device and system trees)"
    if len(parts) == 2 and parts[0] == "home" or norm == "/root":
        return f"is a home directory ({norm}) itself (rule: home directories)"
    for d in protect:
        if d and (norm_remote_path(d) == norm or norm_remote_path(d).startswith(norm + "/")):
            return f"is or contains {norm_remote_path(d)}, the job's workdir or deploy dest (rule: what the job needs)"
    return None
