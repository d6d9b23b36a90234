"""A reader that comes to a job late: dating the backlog's last progress, and the console capture.

**When was the last progress?**  A first read sees lines written long ago.  Its last progress
line is dated by its own timestamp (:func:`~.logline.line_time`, by the target's clock) when it has
one.  Without one the time is unknown (``clock.undated``): the log's mtime bounds it (progress was
written no later than the log) but does not date it, since any other line moves it (a heartbeat
thread keeps a deadlocked job's log fresh).  :func:`follow_undated` then follows the job for one
``stall_after`` window before a one-shot judge (``cockpit status``, ``cockpit verify``) says
stalled or not: progress within it dates itself; none is a stall.

**The console file** (``[job] capture_output = false``): :func:`read_console` reads the new bytes of
``LOG.console`` with every reading of the job, so its tracebacks count while the job runs.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from .logline import console_command, line_time, parse_console
from .progressclock import ProgressClock
from .stall import stall_unknown

#: a first look (or the exit) behind more than this many readings' worth of log reads its first and
#: its last reading's worth and skips the middle: a judge needs the start and the end (the last
#: progress, the traceback), and a log of tens of GB is not pulled over the link to find them
SKIP_OVER_READINGS = 15


def middle_to_skip(upto: int | None, offset: int, read: int, max_bytes: int) -> int:
    """Bytes to skip at ``offset`` before reading on to ``upto`` (a first look's or the exit's end):
    all but the last reading's worth once a reading's worth was read and more than
    :data:`SKIP_OVER_READINGS` are left; else 0."""
    if upto is None or read < max_bytes or upto - offset <= SKIP_OVER_READINGS * max_bytes:
        return 0
    return upto - max_bytes - offset


def from_whole_line(data: bytes, mid_line: bool) -> tuple[bytes, bool]:
    """``data`` from its first whole line on when it starts mid-line (the first bytes after a skip),
    and whether the bytes after it still do (``data`` held no line end)."""
    if not mid_line or not data:
        return data, mid_line
    cut = data.find(b"\n") + 1
    return (data[cut:], False) if cut else (b"", True)

if TYPE_CHECKING:
    from .base import ActionContext
    from .jobreading import JobState
    from .jobrecord import JobRecord
    from .jobstate import JobReader

__all__ = ["date_backlog", "read_console", "follow_undated"]

#: how often a one-shot judge looks again while it follows an undated backlog
FOLLOW_TICK_S = 0.5


#: how much earlier than the job's launch a line's stamp may read (clock skew, a rounded launch time)
BEFORE_LAUNCH_S = 60.0


def zone_lag(newest: str | None, st: JobState) -> float:
    """How far the job's stamps lag the target's clock when it stamps them in another zone: the log's
    newest line was written when the log was (its mtime), so its stamp reading a whole number of
    quarter hours earlier (within a minute) is that zone's offset; 0 otherwise."""
    stamp = line_time(newest, st.remote_now, st.tz) if st.remote_now is not None else None
    if stamp is None or st.log_mtime is None:
        return 0.0
    lag = st.log_mtime - stamp
    quarters = round(lag / 900) * 900
    return float(quarters) if quarters and abs(lag - quarters) <= BEFORE_LAUNCH_S else 0.0


def date_backlog(clock: ProgressClock, st: JobState, first: bool, launched_at: float | None = None, newest: str | None = None) -> None:
    """On a reader's first read: date its last progress line (see the module doc), its stamp moved
    by :func:`zone_lag`.  A stamp earlier than the job's launch (``launched_at``, this machine's
    clock) is no time of writing either: the job stamps its lines in another zone than the target's
    (``TZ`` in its environment, UTC by ``gmtime``)."""
    if not first or clock.last_at is None or st.remote_now is None:
        return
    stamp = line_time(clock.last_line, st.remote_now, st.tz)
    if stamp is not None:
        stamp += zone_lag(newest, st)
    if stamp is not None and launched_at and stamp < launched_at + (st.remote_now - time.time()) - BEFORE_LAUNCH_S:
        stamp = None
    if stamp is not None:
        clock.last_at = min(clock.last_at, time.time() - max(0.0, st.remote_now - stamp))
        return
    if st.log_mtime is not None:
        clock.last_at = min(clock.last_at, time.time() - max(0.0, st.remote_now - st.log_mtime))
    clock.undated = True


async def read_console(reader: JobReader, st: JobState, *, whole: bool = False) -> None:
    """The console capture's new bytes, fed to the reader's scan (a tail read starts at a whole line).

    ``whole`` (a reader's first reading, or one that shows the job exited) reads at least what the
    console held when it began, past ``max_bytes``: the traceback at the end of a console over it
    went unread, and a later verify said "no traceback in the log" (:meth:`~.jobstate.JobReader.read`);
    behind a very large console its middle is skipped, as the log's is."""
    if reader.console is None:
        return
    read = 0
    upto: int | None = None
    mid_line = False
    while True:
        res = await reader.ctx.run(console_command(reader.console, reader.console_offset, 1 << 20), timeout=10)
        size, data = parse_console(res.stdout)
        if reader.console_offset < 0:
            cut = data.find(b"\n") + 1 if size > -reader.console_offset else 0
            reader.scan.feed_console(data[cut:])
            reader.console_offset = max(0, size)
            return
        if 0 <= size < reader.console_offset:  # truncated or replaced under us
            reader.console_offset = 0
            continue
        if size >= 0:
            data = data[: max(0, size - reader.console_offset)]
        reader.console_offset += len(data)
        read += len(data)
        got = len(data)
        data, mid_line = from_whole_line(data, mid_line)
        reader.scan.feed_console(data)
        if whole and upto is None:
            upto = size
        if got < 1 << 20 or read >= reader.max_bytes and (upto is None or reader.console_offset >= upto):
            return
        if skip := middle_to_skip(upto, reader.console_offset, read, reader.max_bytes):  # as the log's reader does
            reader.console_offset += skip
            reader.skipped += skip
            mid_line, reader.scan.console_partial = True, b""


async def follow_undated(ctx: ActionContext, job: JobRecord, reader: JobReader, st: JobState) -> JobState:
    """Follow a live job whose last progress cannot be dated until a stall can be judged (see the
    module doc); returns the last reading.  At once when nothing is unknown."""
    while st.alive and not st.queued:
        left = stall_unknown(ctx.cfg.verify.stall_after, reader.scan.clock, time.time(), job.launched_at)
        if left is None:
            break
        await asyncio.sleep(min(FOLLOW_TICK_S, left + 0.05))
        st = await reader.read()
    return st
