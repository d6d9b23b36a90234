"""Where a job writes instead of its log: the files its processes hold open for writing.

A trainer that logs to a file of its own (``logging.FileHandler("run/train.log")``, a
``--log-file`` flag) leaves the configured log empty, or with a line or two, while it trains.
Verify's "no progress marker" and "the log stayed empty" then say nothing of where the progress
goes.  :func:`written_files` reads the job's processes' open descriptors (``/proc/PID/fd`` and the
access mode in ``/proc/PID/fdinfo``) in one command: the regular files open for writing, other than
the log and cockpit's own files, are named in those stages' words.
"""

from __future__ import annotations

import shlex

from ..remote.base import RemoteError
from .base import ActionContext
from .jobstate import JobState

__all__ = ["written_files", "elsewhere_note", "elsewhere"]

#: at most this many files are named (a trainer holding shards open for writing has many)
SHOWN = 3
#: descriptors that are never the job's own output
_SKIP = ("/dev/", "/proc/", "/sys/", "/run/")


async def written_files(ctx: ActionContext, st: JobState, log_path: str) -> list[str]:
    """The regular files the job's live processes hold open for writing, other than the log (the
    files beside it that cockpit writes: ``LOG.*``) and ``/dev``, ``/proc``, ``/sys`` and ``/run``."""
    pids = sorted({m.pid for m in st.members})[:16]
    if not pids:
        return []
    cmd = ("for p in " + " ".join(str(int(p)) for p in pids) + "; do for f in /proc/$p/fd/*; do l=$(readlink \"$f\") || continue; "
           "case $l in /*) m=$(sed -n 's/^flags:[[:space:]]*//p' \"/proc/$p/fdinfo/${f##*/}\" 2>/dev/null); "
           "printf '%s %s\\n' \"$m\" \"$l\";; esac; done; done 2>/dev/null")
    try:
        res = await ctx.run(cmd, timeout=5)
    except RemoteError:
        return []
    found: list[str] = []
    for line in res.text.splitlines():
        flags, _, path = line.partition(" ")
        try:
            mode = int(flags, 8) & 3  # O_WRONLY 1, O_RDWR 2
        except ValueError:
            continue
        if (not mode or path.endswith(" (deleted)") or path.startswith(_SKIP) or path == log_path
                or path.startswith(log_path + ".") or path in found):
            continue
        found.append(path)
    return found


def elsewhere_note(files: list[str]) -> str:
    """``; it writes /w/run/train.log (open for writing): is its output there?`` ("" for none)."""
    if not files:
        return ""
    more = f" and {len(files) - SHOWN} more" if len(files) > SHOWN else ""
    return (f"; it holds {', '.join(shlex.quote(f) for f in files[:SHOWN])}{more} open for writing: "
            "does it log there? ([job] log names the file it writes with capture_output = false)")


async def elsewhere(ctx: ActionContext, st: JobState, log_path: str) -> str:
    """:func:`elsewhere_note` of the files the job writes, while it lives ("" once it is gone)."""
    return elsewhere_note(await written_files(ctx, st, log_path)) if st.alive else ""
