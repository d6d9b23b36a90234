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

Modules: :mod:`.store` (objects and manifests), :mod:`.diff` (per-file changes, unified diff
text), :mod:`.record` (the entry points above); this package re-exports their public names.
"""

from __future__ import annotations

from .record import DEFAULT_MAX_BYTES, diff_manifests, diff_source, read_diff, record_attempt_changes, summarise
from .store import deployed_manifest, load_manifest, object_path, previous_snapshot, snapshot

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
    "DEFAULT_MAX_BYTES",
]
