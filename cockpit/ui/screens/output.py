"""The output of a user action (``[[actions]]`` with ``view = true``), in a scrollable view.

The output is remote text: already stripped of escape and control characters by the core, shown
in a plain ``Log`` (never markup), with the exact command, where it ran and its exit code above.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Log, Static

from ...core.user_actions import MAX_OUTPUT, UserActionResult
from .backdrop import BackdropModal

__all__ = ["OutputScreen"]


class OutputScreen(BackdropModal[None]):
    BINDINGS = [Binding("escape,q", "close", "Close", id="output-close")]

    def __init__(self, result: UserActionResult, where: str = "") -> None:
        super().__init__()
        self.result, self.where = result, where

    def compose(self) -> ComposeResult:
        r = self.result
        cut = f" · output cut at {MAX_OUTPUT >> 20} MiB ({r.omitted_bytes} more bytes not kept)" if r.omitted_bytes else ""
        with Vertical(id="verdict-box", classes="modal-box"):
            yield Static(Text(f"{r.name} · {r.answer()} · {r.duration_s:.2f} s{cut}"), id="output-title", classes="modal-title")
            yield Static(Text(f"$ {r.command}"), id="output-command", classes="modal-dim")
            if self.where:
                yield Static(Text(self.where), classes="modal-dim")
            log = Log(id="verdict-scroll", auto_scroll=False)
            log.can_focus = True
            yield log
            yield Static("esc: close   ↑↓ PgUp PgDn: scroll", classes="modal-dim")

    def on_mount(self) -> None:
        log = self.query_one(Log)
        log.write_lines(self.result.output.split("\n") if self.result.output else ["(no output)"])
        log.scroll_home(animate=False)
        log.focus()

    @property
    def lines(self) -> list[str]:
        """The lines shown (none before the view is composed)."""
        logs = self.query(Log)
        return list(logs.first().lines) if logs else []

    def action_close(self) -> None:
        self.dismiss(None)
