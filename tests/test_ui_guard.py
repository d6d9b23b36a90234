"""The handler guard: a message that reaches a handler after its panes or every screen are gone
(the app shutting down) is ignored; any other error still surfaces."""

from __future__ import annotations

import pytest
from textual.app import App

from cockpit.ui.guard import while_mounted


class Closing(App[None]):
    """An app whose screen stack is empty, as while it shuts down (never run)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    @while_mounted
    def on_update(self, what: str) -> None:
        self.seen.append(what)
        _ = self.screen  # the compile handler reads the active screen first
        self.seen.append("after the screen")

    @while_mounted
    def on_pane(self, what: str) -> None:
        self.query_one("#log")  # the pane is gone

    @while_mounted
    def on_bug(self, what: str) -> None:
        raise ValueError(what)


def test_a_late_message_after_every_screen_is_gone_is_ignored() -> None:
    app = Closing()
    app.on_update("compile")
    assert app.seen == ["compile"]  # it ran, and stopped where the screen was gone


def test_a_late_message_after_its_pane_is_gone_is_ignored() -> None:
    Closing().on_pane("log")


def test_any_other_error_is_raised() -> None:
    with pytest.raises(ValueError, match="a real bug"):
        Closing().on_bug("a real bug")
