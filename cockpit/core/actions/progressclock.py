"""When the job's progress lines arrived: :class:`ProgressClock` (plain data, no I/O).

Lines read together are spread over the time since the previous read (a follower that polls once
a second sees several steps at once), so the median interval between steps is the job's own
rhythm, not cockpit's polling.  The log's reading (:mod:`.logscan`) keeps one; the stall judges
(:mod:`.stall`, which re-exports it) read it.  It lives below both so the log's reading does not
stand on the stall judges, which read the target through an action's context.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import deque
from dataclasses import dataclass, field

__all__ = ["ProgressClock"]

_NUMBER = re.compile(r"\d+")


@dataclass
class ProgressClock:
    """When progress lines arrived (see the module doc)."""

    intervals: deque[float] = field(default_factory=lambda: deque(maxlen=512))
    last_at: float | None = None
    last_line: str | None = None
    count: int = 0
    #: the last progress was read in a backlog without a time of its own (:mod:`.backlog`):
    #: ``last_at`` is only a bound of it, until a progress line is read as it comes
    undated: bool = False
    _pending: int = 0
    _pending_line: str | None = None
    #: the numbers in the progress pattern's match (``step 120``: its count), the match itself, and
    #: when that count last changed (dated as progress is), how often, the intervals between its
    #: changes and the progress lines read since that repeat it (:func:`stuck_count`)
    count_key: tuple[str, ...] = ()
    count_text: str = ""
    changed_at: float | None = None
    changes: int = 0
    change_intervals: deque[float] = field(default_factory=lambda: deque(maxlen=512))
    repeats: int = 0
    _pending_changes: int = 0

    def saw(self, line: str, marker: str = "") -> None:
        """A progress line was read, ``marker`` the progress pattern's match in it (call :meth:`tick`
        once the whole read is fed)."""
        self._pending += 1
        self._pending_line = line
        key = tuple(_NUMBER.findall(marker))
        if key != self.count_key:
            self.count_key, self.count_text, self.repeats = key, marker, 0
            self._pending_changes += 1 if key else 0
        elif key:
            self.repeats += 1

    def tick(self, now: float | None = None) -> None:
        """The end of one read: date the progress lines it held."""
        if not self._pending:
            return
        now = time.time() if now is None else now
        if self.last_at is not None and now > self.last_at:
            step = (now - self.last_at) / self._pending
            self.intervals.extend([step] * min(self._pending, 64))
        self.count += self._pending
        self.last_at, self.last_line = now, self._pending_line
        if self._pending_changes:
            if self.changed_at is not None and now > self.changed_at:
                step = (now - self.changed_at) / self._pending_changes
                self.change_intervals.extend([step] * min(self._pending_changes, 64))
            self.changes += self._pending_changes
            self.changed_at, self._pending_changes = now, 0
        self.undated = False
        self._pending, self._pending_line = 0, None

    def median_interval(self) -> float | None:
        return statistics.median(self.intervals) if self.intervals else None

    def silent_for(self, now: float | None = None) -> float | None:
        if self.last_at is None:
            return None
        return max(0.0, (time.time() if now is None else now) - self.last_at)
