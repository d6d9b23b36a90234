"""Where every thread of the job is: the stack dump, grouped by identical stacks.

Opened by the stacks key (``w``) once :meth:`cockpit.core.engine.Engine.stacks` has run (the dump
is saved with the attempt too).  The dump's text is job data: shown as plain ``Text``, never markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...core.actions.stacks import StackDump
from ..shown import shown_block

__all__ = ["StacksScreen"]


class StacksScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,w", "close", "Close", id="stacks-close")]

    def __init__(self, dump: StackDump) -> None:
        super().__init__()
        self.dump = dump

    def compose(self) -> ComposeResult:
        with Vertical(id="verdict-box", classes="modal-box"):
            yield Static(Text(f"threads' stacks ({self.dump.method})"), classes="modal-title")
            with VerticalScroll(id="verdict-scroll"):
                yield Static(Text(shown_block(self.dump.text())), id="stacks-text")
            yield Static("esc: close", classes="modal-dim")

    def action_close(self) -> None:
        self.dismiss(None)
