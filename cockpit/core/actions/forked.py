"""A process the trainer started that trains on after the trainer's exit carries the job on.

:func:`~.survivors.main_exited` reads the exit status of the job's main process as the job's end
whatever the processes it started still do: torch's data-loader workers linger seconds after their
parent's death and may print a ``BrokenPipeError``, never a progress line.  A trainer that ``fork``s
and dies while its child trains on in the same log (a rank that forked its successor, a
``multiprocessing`` trainer whose parent raised) was read ``died``, final, while the child's steps
went on.  Progress lines are the difference: a process the main one started that writes progress
after the main's exit is followed as the job (:func:`~.survivors.adopt`), named as what the main
process started, and the main's status is kept as the "launcher's" (its traceback stays an error
in the log: the job's end is then told from the log, :func:`~.survivors.gone_cause`).

Progress after the exit is progress lines read after the reading that first showed the exit with
such processes alive, or, in the first reading of a reader that never saw the job before (``cockpit
status``), the last progress line after the log's last error with the log written after the exit
status.  :func:`settle_leftovers` gives a fate that would end the job on such a reading up to
:data:`WATCH_S` to tell the two apart (a child whose first step after its parent's death comes later
is told by the next reader that reads the log from its start, ``cockpit status``).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from .survivors import adopt, name_survivor

if TYPE_CHECKING:
    from .base import ActionContext
    from .jobreading import JobState
    from .jobrecord import JobRecord
    from .jobstate import JobReader
    from .logscan import LogScan

__all__ = ["trains_on", "follow_forked", "settle_leftovers", "watching"]

#: the pace of the readings while processes the main one started are watched, and for how long at most
#: (a failed attempt whose data-loader workers linger returns that much later)
TICK_S = 0.2
WATCH_S = 1.0


def trains_on(st: JobState, scan: LogScan, at_exit: int | None) -> bool:
    """A process the exited main one started writes progress lines after that exit (see the module
    doc); ``at_exit`` is the progress count after the reading that first showed the exit (None: this
    is that reading)."""
    if not st.leftovers or st.exit_code is None:
        return False
    if at_exit is not None:
        return scan.progress_count > at_exit
    err = scan.final_error()
    after = st.log_mtime is not None and st.exit_at is not None and st.log_mtime > st.exit_at
    return after and err is not None and scan.progress_no > int(err.get("line_no") or 0)


async def follow_forked(ctx: ActionContext, job: JobRecord, st: JobState, scan: LogScan, at_exit: int | None) -> bool:
    """Follow the process that trains on (:func:`trains_on`) as the job; True when it does."""
    if not trains_on(st, scan, at_exit):
        return False
    st.leftovers = []
    job.forked = True
    lead = adopt(job, st, None)
    if lead is not None:
        await name_survivor(ctx, job, st, lead)
    return True


def watching(reader: JobReader, st: JobState) -> bool:
    """The reading ends the job while processes its main one started live on, first seen so less than
    :data:`WATCH_S` ago: read again before judging (verify, a fate)."""
    seen = reader.exit_seen
    return bool(st.leftovers) and not st.alive and seen is not None and time.monotonic() - seen < WATCH_S


async def settle_leftovers(reader: JobReader, st: JobState) -> JobState:
    """A reading that ends the job while processes its main one started live on is read again until
    :data:`WATCH_S` after that was first seen (verify's watch counts), until they are gone or one of
    them trains on."""
    while watching(reader, st):
        await asyncio.sleep(TICK_S)
        st = await reader.read()
    return st
