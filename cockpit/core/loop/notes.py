"""Notes for on-save attempts: the last hypothesis again, with a try counter (``"idea (#3)"``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..journal import AttemptRecord, Journal

__all__ = ["NoteCounter", "strip_counter"]

log = logging.getLogger(__name__)

_COUNTER = re.compile(r"\s*\(#\d+\)\s*$")


def strip_counter(note: str) -> str:
    """``"same hypothesis (#3)"`` → ``"same hypothesis"``."""
    return _COUNTER.sub("", note or "").strip()


class NoteCounter:
    """Notes for headless on-save attempts: the last hypothesis again, with a try counter.

    The first try of a hypothesis keeps the note as written; later ones use ``template``
    (default ``"{last_note} (#{n})"``: ``"same hypothesis (#3)"``, n counted from the journal, so
    a restarted ``cockpit watch`` keeps counting).  With no hypothesis at all the note says which
    files were saved.  An unreadable journal is logged and counts as empty.
    """

    def __init__(self, base: str | None = None, *, template: str = "{last_note} (#{n})", journal: Journal | None = None) -> None:
        self.template = template
        self.journal = journal
        self._n: dict[str, int] = {}
        if base is None and journal is not None:
            recs = self._records() or []
            base = next((strip_counter(r.note) for r in reversed(recs) if strip_counter(r.note)), "")
        self.base = strip_counter(base or "")

    def _records(self) -> list[AttemptRecord] | None:
        """The journal's attempts, or None without a journal or when it cannot be read."""
        if self.journal is None:
            return None
        try:
            return self.journal.attempts()
        except (OSError, ValueError):
            log.warning("cannot read the journal %s to count tries", getattr(self.journal, "path", "?"), exc_info=True)
            return None

    def _tries(self, base: str) -> int:
        recs = self._records()
        if recs is not None:
            return sum(1 for r in recs if strip_counter(r.note) == base)
        return self._n.get(base, 0)

    def next(self, files: Iterable[str] = (), attempt: int | None = None) -> str:
        files = list(files)
        shown = ", ".join(files[:3]) + (f", … {len(files) - 3} more" if len(files) > 3 else "")
        base = self.base
        if not base:
            return f"on save: {shown}" if shown else "on save"
        n = self._tries(base) + 1
        if n <= 1:
            return base
        try:
            return self.template.format(last_note=base, n=n, attempt=attempt if attempt is not None else "?", files=shown)
        except (KeyError, IndexError, ValueError):
            return f"{base} (#{n})"

    def used(self, note: str) -> None:
        """Record that ``note`` was used (a new hypothesis becomes the base for the next ones)."""
        base = strip_counter(note)
        if base and not base.startswith("on save"):
            self.base = base
        self._n[base] = self._n.get(base, 0) + 1
