"""Content hashing shared by deploy (the manifest it verifies), the source watcher and the change store.

:func:`parse_sha256sum_z` reads the remote side of deploy's check: ``sha256sum -z`` output, one
``DIGEST  NAME`` record per file, each ended by a NUL and the name never escaped, so any file name
(spaces, newlines, backslashes, quotes, a leading dash, bytes that are not UTF-8) comes back as it
was sent.
"""

from __future__ import annotations

import hashlib
import os
import re

__all__ = ["file_sha256", "bytes_sha256", "parse_sha256sum_z"]

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


#: one ``sha256sum -z`` record: 64 hex digits, " " and " " (text) or "*" (binary mode), the name
_RECORD = re.compile(rb"([0-9a-f]{64}) [ *](.*)", re.S)


def parse_sha256sum_z(data: bytes) -> tuple[dict[str, str], list[bytes]]:
    """``sha256sum -z`` output → ({name: hex digest}, records that were not a digest line).

    Names are decoded as the file system decodes them (``os.fsdecode``: UTF-8, other bytes kept
    with ``surrogateescape``), so they compare equal to the names a local walk produced.
    """
    digests: dict[str, str] = {}
    bad: list[bytes] = []
    for rec in data.split(b"\0"):
        if not rec:
            continue
        m = _RECORD.fullmatch(rec)
        if m is None:
            bad.append(rec[:200])
            continue
        digests[os.fsdecode(m.group(2))] = m.group(1).decode()
    return digests, bad
