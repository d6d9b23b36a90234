"""Where every thread of the job is: the stack dump, grouped by identical stacks.

Opened by the stacks key (``w``) once :meth:`cockpit.core.engine.Engine.stacks` has run (the dump
is saved with the attempt too).  In ``--read-only``, ``--share`` and the browser view cockpit runs
nothing in the target and writes nothing: ``w`` opens the dump the journal kept for the current
attempt (:func:`saved_stacks`, ``StacksScreen(saved=…)``), and the screen says it is that one and
when it was taken.  The dump's text is job data: shown as plain ``Text``, never markup.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from ...core.actions.stacks import StackDump
from ...core.text import sanitize
from ..shown import shown_block
from .backdrop import BackdropModal

if TYPE_CHECKING:
    from ...core.face import EngineFace

__all__ = ["StacksScreen", "saved_stacks", "saved_banner"]


def saved_stacks(engine: EngineFace) -> dict[str, Any] | None:  # Any: the journal's JSON
    """The dump the journal kept for the current attempt (the one whose job cockpit follows, else
    the latest): only read, never written.  None when that attempt has none."""
    journal = engine.journal
    attempt = engine.job_attempt
    rec = journal.get(attempt) if attempt is not None else next(iter(reversed(journal.attempts())), None)
    stacks = rec.stacks if rec is not None else None
    return stacks if isinstance(stacks, dict) and isinstance(stacks.get("text"), str) else None


def saved_banner(saved: dict[str, Any]) -> str:  # Any: the journal's JSON
    """``read-only: the last dump, taken HH:MM:SS`` (the date too when not today)."""
    at = saved.get("at")
    if not isinstance(at, (int, float)) or isinstance(at, bool):
        return "read-only: the last dump (its time unknown); nothing was run in the target"
    t = time.localtime(at)
    fmt = "%H:%M:%S" if time.strftime("%Y%m%d", t) == time.strftime("%Y%m%d") else "%Y-%m-%d %H:%M:%S"
    return f"read-only: the last dump, taken {time.strftime(fmt, t)}; nothing was run in the target"


class StacksScreen(BackdropModal[None]):
    BINDINGS = [Binding("escape,q,w", "close", "Close", id="stacks-close")]

    def __init__(self, dump: StackDump | None = None, *, saved: dict[str, Any] | None = None) -> None:  # Any: the journal's JSON
        """``dump``: one taken now; ``saved``: the one the journal kept (``stacks`` event), shown as it
        was rendered when taken, under a line that says so."""
        super().__init__()
        self.dump = dump
        if dump is not None:
            self.heading, self.body, self.banner = f"threads' stacks ({dump.method})", dump.text(), ""
        else:
            saved = saved or {}
            method = saved.get("method")
            self.heading = f"threads' stacks ({sanitize(method, 40) if isinstance(method, str) else 'saved'})"
            self.body = str(saved.get("text", ""))
            self.banner = saved_banner(saved)

    def compose(self) -> ComposeResult:
        with Vertical(id="verdict-box", classes="modal-box"):
            yield Static(Text(self.heading), classes="modal-title")
            if self.banner:
                yield Static(Text(self.banner), id="stacks-banner", classes="modal-dim")
            with VerticalScroll(id="verdict-scroll"):
                yield Static(Text(shown_block(self.body)), id="stacks-text")
            yield Static("esc: close", classes="modal-dim")

    def action_close(self) -> None:
        self.dismiss(None)
