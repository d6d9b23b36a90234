"""Every message the UI passes around, in one place.

Workers (and the engine's stage listener, which runs inside the engine's coroutine) only *post*
these; the app's handlers are the only code that touches widgets.  Snapshot-like messages
(a process table, a GPU snapshot, the journal) replace an older queued one of the same kind
(``can_replace``), so a slow screen never works through a backlog of stale snapshots; log batches
and stage events are never merged (each carries new facts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message
from textual.notifications import SeverityLevel
from textual.theme import Theme

from ..core.attempt import AttemptResult
from ..core.config import Config, ConfigError
from ..core.events import CompileUpdated as CoreCompileUpdated
from ..core.events import FateChanged as CoreFateChanged
from ..core.fate_record import Fate
from ..core.journal import AttemptRecord, JournalFault
from ..core.layers import Stage, Verdict
from ..core.observe import GPUView, KmsgView, LogView, ProcsView
from ..core.probes.logs import LogEvent
from ..core.probes.signatures import Match
from ..core.user_actions import UserActionResult

__all__ = [
    "StageEvent",
    "ActionStarted",
    "ActionFinished",
    "ActionRefused",
    "UserActionDone",
    "FateChanged",
    "ProcsRefreshed",
    "GpuRefreshed",
    "KmsgRefreshed",
    "LogBatch",
    "HistoryRefreshed",
    "SourceChanged",
    "LoopNotice",
    "ConfigReloaded",
    "ConfigInvalid",
    "ThemeFileReloaded",
    "ThemeFileInvalid",
]


class _Snapshot(Message):
    def can_replace(self, message: Message) -> bool:
        return type(message) is type(self)


@dataclass
class StageEvent(Message):
    """The engine decided (or started) one stage of ``action``."""

    action: str
    stage: Stage


@dataclass
class ActionStarted(Message):
    action: str
    note: str = ""


@dataclass
class ActionFinished(Message):
    """An action ended.  ``verdict`` is None when it crashed (``error`` says why)."""

    action: str
    verdict: Verdict | None
    outcome: str | None = None
    attempt: int | None = None
    first_error: dict[str, Any] | None = None  # Any: the journal's JSON
    error: str | None = None
    duration_s: float = 0.0
    #: the engine's AttemptResult when an attempt's verdict landed (bell, tmux, one-line toast)
    result: AttemptResult | None = None


@dataclass
class FateChanged(Message):
    """The engine's :class:`cockpit.core.events.FateChanged`, as a message (it says what is news)."""

    event: CoreFateChanged

    @property
    def attempt(self) -> int:
        return self.event.attempt

    @property
    def fate(self) -> Fate:
        return self.event.fate

    @property
    def outcome(self) -> str | None:
        return self.event.outcome

    @property
    def news(self) -> bool:
        return self.event.news


@dataclass
class CompileChanged(Message):
    """The engine's :class:`cockpit.core.events.CompileUpdated`: an attempt's compile summary changed."""

    event: CoreCompileUpdated


@dataclass
class ActionRefused(Message):
    """The engine refused to start (the target is busy)."""

    action: str
    reason: str


@dataclass
class UserActionDone(Message):
    """One of the user's ``[[actions]]`` ran (or could not: its verdict says where)."""

    result: UserActionResult


@dataclass
class ProcsRefreshed(_Snapshot):
    view: ProcsView


@dataclass
class GpuRefreshed(_Snapshot):
    view: GPUView


@dataclass
class KmsgRefreshed(_Snapshot):
    view: KmsgView


@dataclass
class LogBatch(Message):
    """New lines of the followed log, collected over ~100 ms.

    ``first_no`` is the 1-based number of ``lines[0]`` in the file as followed; ``matches`` are
    the classifier's matches found in this batch.  ``view`` is the log part (freshness, path).
    """

    path: str | None
    first_no: int
    lines: list[str] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)
    events: list[LogEvent] = field(default_factory=list)
    view: LogView | None = None


@dataclass
class HistoryRefreshed(_Snapshot):
    records: list[AttemptRecord]
    collected_at: float = 0.0
    changed: bool = True  # False: the journal was read again and nothing changed (freshness only)
    #: the journal cannot be written (records queued in memory), or None
    journal_fault: JournalFault | None = None

    def can_replace(self, message: Message) -> bool:
        if type(message) is not type(self):
            return False
        self.changed = self.changed or message.changed
        return True


# -- the edit → attempt loop and live reload ------------------------------------------------------

@dataclass
class SourceChanged(_Snapshot):
    """The deploy source versus the last deploy, and the attempt loop's state.

    ``pending`` is relpath → "added" | "modified" | "removed"; ``on_save`` whether attempt-on-save
    is on; ``state`` the loop's state (``idle``, ``asking``, ``busy-wait``, ``running``)."""

    pending: dict[str, str]
    on_save: bool = False
    state: str = "idle"
    queued: bool = False


@dataclass
class LoopNotice(Message):
    """Something the attempt loop or a reloader wants the user to know (a toast)."""

    text: str
    severity: SeverityLevel = "information"
    title: str = "cockpit"


@dataclass
class ConfigReloaded(Message):
    """The config file was saved and is valid: ``cfg`` is the new config."""

    cfg: Config


@dataclass
class ConfigInvalid(Message):
    """The config file was saved and is invalid (``error`` is the ConfigError); the running config stays."""

    error: ConfigError


@dataclass
class ThemeFileReloaded(Message):
    path: str
    theme: Theme


@dataclass
class ThemeFileInvalid(Message):
    path: str
    error: BaseException  # a ThemeError: the theme reloader catches only those
