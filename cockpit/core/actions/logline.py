"""How a log's bytes become lines, and when a line says it was written.

**Carriage returns are lines.**  A progress bar (tqdm on stderr) rewrites one line with ``\\r``
and ends it with a newline only when it closes: a job can make progress for hours without a
single ``\\n``.  :func:`split_lines` cuts at both: every segment a ``\\r`` or a ``\\n`` ends is a
line (for the progress pattern, the metrics and the classifier alike); empty segments (the
``\\r`` a bar writes before itself, a ``\\r\\n`` ending) are not.  A trailing ``\\r`` is kept in the
unfinished rest until the next byte says whether it was half of ``\\r\\n``, so the lines are the
same however the bytes were read in chunks (the metrics number lines from the log's start).
A crash under a bar that never ended its line prints its traceback on the bar's line
(``…it/s, loss=0.05]Traceback (most recent call last):``): such a segment is cut where the
traceback's header begins, so the bar is the last progress line and the traceback starts a line
(the unfinished rest keeps the ``\\r`` it followed; :func:`unfinished` is its text).
What is left unfinished (the bar being drawn now) is matched against the progress pattern as it
grows (:class:`~.jobstate.LogScan`), bounded by :data:`MAX_LINE`.

**A line's own time.**  :func:`line_time` reads the timestamp a log line starts with (Python
logging's ``2024-05-01 12:00:00,123``, ISO 8601 with or without a zone, ``[12:00:00]``) as
seconds since the epoch by the target's clock, given the target's ``date +%z``.  A reader that
comes to a log late dates its last progress line by it: the log file's mtime says only when
*something* was written (a heartbeat thread keeps it fresh while the loop is deadlocked).

**The console file.**  With ``[job] capture_output = false`` the job writes its own log and its
console (where an uncaught exception's traceback goes) is captured to ``LOG.console``:
:func:`console_command` reads that file's new bytes, so it is followed live like the log.
"""

from __future__ import annotations

import calendar
import re
import shlex

__all__ = ["split_lines", "unfinished", "line_time", "tz_seconds", "console_command", "parse_console", "MAX_LINE"]

#: the longest line judged whole; a longer one is cut (its start is what a person reads first)
MAX_LINE = 16 << 10

_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?\s?(Z|[+-]\d{2}:?\d{2})?")
_CLOCK = re.compile(r"\[(\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?\]")
#: a timestamp counts only near the line's start (a rank prefix, a level before it), not in a message
_HEAD = 64


_TB_HEAD = b"Traceback (most recent call last):"


def _segments(segs: list[bytes]) -> list[bytes]:
    """The non-empty ``\\r`` segments, each cut before a traceback's header printed on it (see the module doc)."""
    out: list[bytes] = []
    for seg in segs:
        at = seg.find(_TB_HEAD)
        if at > 0:
            out.extend(part for part in (seg[:at], seg[at:]) if part.strip())
        elif seg.strip():
            out.append(seg)
    return out


def split_lines(partial: bytes, data: bytes) -> tuple[list[bytes], bytes]:
    """``(complete lines, unfinished rest)`` of ``partial + data`` (see the module doc)."""
    buf = partial + data
    *complete, rest = buf.split(b"\n")
    out: list[bytes] = []
    for raw in complete:
        if b"\r" not in raw:
            out.append(raw)
        else:
            out.extend(_segments(raw.split(b"\r")))
    hold = rest.endswith(b"\r")
    if hold:
        rest = rest[:-1]
    if b"\r" in rest:
        *segs, rest = rest.split(b"\r")
        out.extend(_segments(segs))
        rest = b"\r" + rest  # still a segment: cut like one when it ends, however the reads fell
    return out, rest + b"\r" if hold else rest


def unfinished(rest: bytes) -> bytes:
    """The text of :func:`split_lines`'s unfinished rest (without the ``\\r`` it keeps before a segment)."""
    return rest.lstrip(b"\r")


def tz_seconds(text: str) -> int | None:
    """``date +%z``'s ``+0130`` / ``-0500`` as seconds east of UTC (None when it is not one)."""
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", text.strip())
    if m is None:
        return None
    s = int(m.group(2)) * 3600 + int(m.group(3)) * 60
    return -s if m.group(1) == "-" else s


def line_time(line: str | None, remote_now: float | None, tz: int | None) -> float | None:
    """When ``line`` says it was written, as seconds since the epoch (see the module doc); None when
    it says nothing, when a naive time cannot be placed (the target's zone unknown), or when the
    time lies in the future of the target's clock (not a time of writing)."""
    if not line or remote_now is None:
        return None
    head = line[:_HEAD + 40]
    m = _DATETIME.search(head)
    when: float | None = None
    if m is not None and m.start() <= _HEAD:
        y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
        try:
            base = float(calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)))
        except (ValueError, OverflowError):
            return None
        zone = m.group(7)
        if zone:
            off = 0 if zone == "Z" else tz_seconds(zone)
            if off is None:
                return None
            when = base - off
        elif tz is not None:
            when = base - tz
    else:
        c = _CLOCK.search(head)
        if c is not None and c.start() <= _HEAD and tz is not None:
            h, mi, s = (int(c.group(i)) for i in range(1, 4))
            if h > 23 or mi > 59 or s > 60:
                return None
            local_now = remote_now + tz
            t = local_now - local_now % 86400 + h * 3600 + mi * 60 + s
            if t > local_now + 60:  # a time later than now today was yesterday's
                t -= 86400
            when = t - tz
    if when is None or when > remote_now + 60:
        return None
    return when


def console_command(path: str, offset: int, read_max: int) -> str:
    """The console file's size and its bytes from ``offset`` (a negative one: its last ``-offset``)."""
    q = shlex.quote(path)
    part = (f"tail -c +{offset + 1} {q} 2>/dev/null | head -c {int(read_max)}" if offset >= 0
            else f"tail -c {-offset} {q} 2>/dev/null")
    return f"if [ -e {q} ]; then echo \"size=$(wc -c < {q})\"; else echo size=-1; fi; echo @@console; {part}"


def parse_console(out: bytes) -> tuple[int, bytes]:
    """``(size, bytes)`` of :func:`console_command`'s output; size -1 when the file is not there."""
    head, sep, data = out.partition(b"\n@@console\n")
    if not sep:
        return -1, b""
    size = head.decode("ascii", "replace").strip().partition("=")[2]
    return (int(size) if size.lstrip("-").isdigit() else -1), data
