"""What the log pane remembers about lines that left its ring, bounded.

The pane keeps, by line number in the file, the gutter marks of classified lines (``marks``), the
classifier's traceback chains (``chains``, for copying a whole traceback) and the jump targets of
errors (``errors``, ``error_labels``).  The lines themselves live in two rings of ``[ui]
log_lines`` (the observer's and the view's), but these maps were never pruned: a job that logs a
classified error every 50 lines grew them by ~200 entries per 10,000 lines, for ever.

:func:`forget_before` drops what belongs to lines no ring can show again (numbers below
``last_no - log_lines``).  The first error stays (the pane's title names it: usually the root
cause); the others dropped are counted (``errors_dropped``) so the title's count stays the number
of errors seen.  The pane calls it only when the maps have grown past twice the ring size, so its
cost is amortised over as many lines.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ...core.probes.signatures import Match
    from .log_view import ChainKey, MarkedLog

__all__ = ["forget_before", "maybe_forget", "Bounded"]


class Bounded(Protocol):
    """What the log pane (:class:`~.log.LogPane`) holds by line number."""

    chains: dict[ChainKey, Match]
    errors: list[int]
    error_labels: dict[int, tuple[str, str]]
    errors_dropped: int
    max_lines: int
    last_no: int

    @property
    def log_view(self) -> MarkedLog: ...


def forget_before(pane: Bounded, oldest: int) -> int:
    """Forget marks, chains and jump targets of lines before ``oldest``; how many entries went."""
    marks = pane.log_view.marks
    gone = [k for k in marks if k < oldest]
    for k in gone:
        del marks[k]
    n = len(gone)
    chains = pane.chains
    old_chains = [c for c, m in chains.items() if m.line_no + len(m.traceback) < oldest]
    for c in old_chains:
        del chains[c]
    n += len(old_chains)
    errors = pane.errors
    cut = bisect.bisect_left(errors, oldest)
    if cut > 1:  # errors[0] stays: the title names the first error
        for e in errors[1:cut]:
            pane.error_labels.pop(e, None)
        del errors[1:cut]
        pane.errors_dropped += cut - 1
        n += cut - 1
    return n


def maybe_forget(pane: Bounded) -> int:
    """:func:`forget_before` the rings' window once the maps hold more than twice the ring size."""
    held = len(pane.log_view.marks) + len(pane.chains) + len(pane.errors)
    if held <= 2 * max(1, pane.max_lines) + 64:
        return 0
    return forget_before(pane, pane.last_no - pane.max_lines + 1)
