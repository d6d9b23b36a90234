"""Content hashing shared by deploy (the manifest it verifies), the source watcher and the change store."""

from __future__ import annotations

import hashlib
import os

__all__ = ["file_sha256", "bytes_sha256"]

_CHUNK = 1 << 20


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The hex SHA-256 of a file's bytes, read in 1 MiB chunks (large files never sit in memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def bytes_sha256(data: bytes) -> str:
    """The hex SHA-256 of ``data`` (content addresses in the change store)."""
    return hashlib.sha256(data).hexdigest()
