"""Journal writer checks: who wrote an attempt, and is that cockpit still alive?

Used by :meth:`Journal.recover <cockpit.core.journal.store.Journal.recover>` to decide whether an
open attempt is orphaned: pid gone, zombie, pid reused (``/proc/PID/stat`` start time), host
rebooted (boot id), or written on another host (cannot be told).
"""

from __future__ import annotations

import os
import socket
from typing import Any

from ..layers import Outcome
from ..procstat import read_local_stat
from .records import AttemptRecord

# --------------------------------------------------------------------------------------------
# Process identity (who wrote an attempt, and is it still alive?)
# --------------------------------------------------------------------------------------------


def _read_stat(pid: int) -> tuple[str, int] | None:
    """(state, start_time) from ``/proc/PID/stat``, or None where it cannot be read."""
    st = read_local_stat(pid)
    return (st.state, st.start_time) if st is not None else None


def proc_start_time(pid: int) -> int | None:
    """``/proc/PID/stat`` field 22 (start time in clock ticks since boot), or None."""
    st = _read_stat(pid)
    return st[1] if st else None


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


def _hostname() -> str:
    return socket.gethostname()


def _pid_running(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (a zombie is dead, merely unreaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    except OSError:
        return False
    st = _read_stat(pid)
    if st is not None and st[0] in ("Z", "X"):
        return False
    return True


def writer_state(rec: AttemptRecord) -> tuple[bool | None, str]:
    """Is the cockpit that wrote ``rec`` still alive?  ``(True|False|None, why)``.

    ``None`` means it cannot be told from here (the attempt was written on another host).
    """
    here = _hostname()
    host = rec.cockpit_host
    if host and host != here:
        return None, f"written by cockpit on host {host!r}; its pid cannot be checked from {here!r}"
    boot = _boot_id()
    if rec.boot_id and boot and rec.boot_id != boot:
        return False, "this machine rebooted since the attempt started"
    pid = rec.cockpit_pid
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False, "no writer pid was recorded (start event missing or torn)"
    if not _pid_running(pid):
        return False, f"cockpit pid {pid} is no longer running"
    recorded = rec.cockpit_start_time
    current = proc_start_time(pid)
    if isinstance(recorded, int) and current is not None and recorded != current:
        return False, f"pid {pid} now belongs to another process (start time {current} != {recorded})"
    if pid == os.getpid():
        return True, f"written by this cockpit (pid {pid})"
    return True, f"cockpit pid {pid} is still running"


def as_read(rec: AttemptRecord) -> tuple[Outcome, str]:
    """An attempt's outcome and summary as a reader of the journal must see them now (``status``
    and ``history`` alike): an attempt still open in the journal whose cockpit is gone (killed,
    its terminal closed) will never end, so it reads ``interrupted`` with the reason.  Only read:
    the next attempt closes it in the journal."""
    if rec.open:
        alive, why = writer_state(rec)
        if alive is False:
            return Outcome.INTERRUPTED, f"cockpit stopped before a verdict: {why}"
    return rec.outcome, rec.summary


def closing_fields(rec: AttemptRecord, reason: str, why: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fields of the ``attempt_interrupted`` and ``attempt_finished`` events that close the
    open attempt ``rec`` whose writer is gone (``why``, as :func:`writer_state` says it)."""
    start = rec.started_at if rec.started_at is not None else rec.first_event_at
    last = rec.last_event_at
    dur = round(max(0.0, last - start), 3) if start is not None and last is not None else None
    summary = f"interrupted: {reason}"
    if rec.stages:
        s = rec.stages[-1]
        summary += f"; last stage seen: {s.action}/{s.stage.name} ({s.stage.status.value})"
    failed = rec.failed_stage
    interrupted = {"reason": reason, "writer_pid": rec.cockpit_pid, "writer_host": rec.cockpit_host, "why": why}
    finished = {"outcome": Outcome.INTERRUPTED.value, "layer": failed.stage.layer.value if failed else None, "summary": summary,
                "first_error": rec.first_error, "duration_s": dur, "caches": rec.caches}
    return interrupted, finished
