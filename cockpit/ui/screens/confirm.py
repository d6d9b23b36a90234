"""Confirm a destructive action, showing the exact command that will run and where."""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from ..panes.base import data_text
from .kept import KeptModal

__all__ = ["ConfirmScreen"]


class ConfirmScreen(KeptModal[bool]):
    """``True`` when confirmed.  Cancel has the focus: Enter alone never destroys anything.

    Kept and reopened (see ``kept.py``): one with a ``where`` line and one without, per app."""

    BINDINGS = [
        Binding("escape,n", "cancel", "Cancel", id="confirm-cancel"),
        Binding("y", "confirm", "Yes", id="confirm-yes"),
        # a short terminal: the text scrolls under the buttons, which stay on screen
        Binding("down", "scroll_text('down')", show=False),
        Binding("up", "scroll_text('up')", show=False),
        Binding("pagedown", "scroll_text('page_down')", show=False),
        Binding("pageup", "scroll_text('page_up')", show=False),
        Binding("end", "scroll_text('end')", show=False),
        Binding("home", "scroll_text('home')", show=False),
    ]

    def __init__(self, title: str, body: str, command: str, *, where: str = "", yes: str = "Yes") -> None:
        super().__init__()
        self.title_text, self.body, self.command, self.where, self.yes = title, body, command, where, yes

    @classmethod
    def kept_shape(cls, title: str, body: str, command: str, *, where: str = "", yes: str = "Yes") -> Hashable:
        return bool(where)

    def kept_shape_now(self) -> Hashable:
        return bool(self.where)

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="modal-box"):
            # the commands and what they act on hold remote text (process command lines): data, never markup
            yield Static(data_text(self.title_text), id="confirm-title", classes="modal-title")
            yield Static(data_text(self.body), id="confirm-body")
            if self.where:
                yield Static(data_text(self.where), id="confirm-where", classes="modal-dim")
            yield Static(data_text(self.command), id="confirm-command")
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel (esc)", id="confirm-no", variant="primary")
                yield Button(f"{self.yes} (y)", id="confirm-ok", variant="error")

    def reopen(self, title: str, body: str, command: str, *, where: str = "", yes: str = "Yes") -> None:
        self.title_text, self.body, self.command, self.where, self.yes = title, body, command, where, yes
        for wid, text in (("#confirm-title", title), ("#confirm-body", body), ("#confirm-where", where), ("#confirm-command", command)):
            for w in self.query(wid).results(Static):
                w.update(data_text(text))
        self.query_one("#confirm-ok", Button).label = f"{yes} (y)"
        self.set_focus(None)  # as a new one: Cancel gets the focus (and its Focus event)
        self.set_focus(self.query_one("#confirm-no", Button))

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-ok")

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_scroll_text(self, where: str) -> None:
        box = self.query_one("#confirm-box")
        {"down": box.scroll_down, "up": box.scroll_up, "page_down": box.scroll_page_down, "page_up": box.scroll_page_up,
         "end": box.scroll_end, "home": box.scroll_home}[where](animate=False)
