"""Adaptive refresh: how long each poll loop waits before its next refresh.

A fixed period costs the same whether anything happens or not; cockpit stays open all day.
:class:`Pacer` waits

* the configured period while things change, and up to ``max_factor`` times it once the part has
  looked the same ``calm_after`` times in a row (the process table of an idle container), never so
  long that the status line would call the data stale (three periods);
* at least ``1 / duty`` times what the last refresh took (four times, by default), so a slow
  link (a refresh that takes 0.8 s) is not probed back to back;
* a quarter of the period (at least ``fast_s``) while an action runs (a relaunch, a reboot):
  that is when the screen must keep up;
* longer after failures (the period times ``1 + failures``, 30 s at most).

The log has its own rhythm (:meth:`Pacer.log_wait`): a poll every 0.1 s while lines flow (counted
from one poll's start to the next: the time a read took is not added to the wait), half a second
for a while after the last one, then the period.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Pacer", "signature"]


@dataclass
class Pacer:
    """The wait before the next refresh of one part (see the module doc)."""

    period: Callable[[], float]
    busy: Callable[[], bool] = field(default=lambda: False)
    max_factor: float = 2.0
    calm_after: int = 3
    #: the most of the time a part may spend refreshing on a slow link
    duty: float = 0.25
    fast_s: float = 0.25
    cap_s: float = 30.0
    unchanged: int = 0
    #: the log's pace while lines flow: one poll's start to the next
    log_flow_s: float = 0.1
    #: the least wait between two log polls (a slow read is followed by a short breath, not at once)
    log_min_s: float = 0.02
    clock: Callable[[], float] = field(default=time.monotonic)
    _last: Any = None  # Any: a signature() value
    #: when the log poll now returning was due to start (the end of the last wait)
    _log_due: float | None = None

    def observe(self, sig: Any) -> bool:  # Any: a signature() value
        """Record this refresh's signature; True when it differs from the last one."""
        changed = bool(sig != self._last)
        self._last = sig
        self.unchanged = 0 if changed else self.unchanged + 1
        return changed

    def wait(self, took_s: float = 0.0, failures: int = 0) -> float:
        p = max(0.05, self.period())
        if failures:
            return min(self.cap_s, p * (1 + failures))
        if self.busy():
            return max(self.fast_s, p / 4, took_s / self.duty)
        factor = 1.0
        if self.unchanged >= self.calm_after:
            factor = min(self.max_factor, 1.0 + 0.25 * (self.unchanged - self.calm_after + 1))
        return min(self.cap_s, max(p * factor, took_s / self.duty))

    def log_wait(self, got_lines: bool) -> float:
        """After a log refresh: while lines flow, what is left of :attr:`log_flow_s` since this
        poll started (at least :attr:`log_min_s`): the read's own time is not added to the pace, so
        the newest line waits at most one pace plus one read; 0.5 s for 10 quiet tries; then the
        period (a quarter of it while an action runs)."""
        self.unchanged = 0 if got_lines else self.unchanged + 1
        now = self.clock()
        if got_lines:
            took = now - self._log_due if self._log_due is not None else 0.0
            wait = max(self.log_min_s, self.log_flow_s - max(0.0, took))
        else:
            p = max(0.1, self.period())
            if self.busy():
                wait = min(0.5, p / 4)
            else:
                wait = min(0.5, p) if self.unchanged <= 10 else p
        self._log_due = now + wait
        return wait


#: processes younger than this (seconds) do not count for pacing: on a busy host short-lived
#: commands come and go on every refresh, and the table would never calm down
YOUNG_S = 10.0


def _settled(p: Any) -> bool:  # Any: duck-typed process (tests pass plain namespaces)
    age = getattr(p, "elapsed_s", None)
    return age is None or age >= YOUNG_S


def signature(msg: Any) -> Any:  # Any: any refresh message, duck-typed (tests pass plain namespaces)
    """What makes a refresh *different* for pacing: for the process table, the set of processes
    older than :data:`YOUNG_S` and their states, the findings and the error (CPU and memory figures
    move on every refresh and do not count); for anything else the message's view as a whole
    (always different: no calming)."""
    view = getattr(msg, "view", None)
    procs = getattr(view, "procs", None)
    if procs is None:
        return object()
    return (frozenset((p.pid, getattr(p, "state", "")) for p in procs if _settled(p)),
            tuple(getattr(f, "kind", "") for f in getattr(view, "findings", [])), getattr(view, "error", None))
