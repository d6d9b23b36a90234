"""Ask for the hypothesis an attempt tests (pre-filled with the last one; shows what changed
since the last deploy when the source is watched)."""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from ...core.text import sanitize
from ..panes.base import data_text
from .kept import KeptModal

__all__ = ["HypothesisScreen"]


class HypothesisScreen(KeptModal["str | None"]):
    """Dismisses with the note (Enter), or None (Escape).  Kept and reopened (see ``kept.py``): one per
    shape (with or without the changed files' line, with or without the plan), per app."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt-cancel")]

    def __init__(self, last_note: str = "", plan: str = "", changed: list[str] | None = None) -> None:
        super().__init__()
        self.last_note, self.plan, self.changed = last_note, plan, changed

    @classmethod
    def kept_shape(cls, last_note: str = "", plan: str = "", changed: list[str] | None = None) -> Hashable:
        return changed is not None, bool(plan)

    def kept_shape_now(self) -> Hashable:
        return self.changed is not None, bool(self.plan)

    def reopen(self, last_note: str = "", plan: str = "", changed: list[str] | None = None) -> None:
        self.last_note, self.plan, self.changed = last_note, plan, changed
        for w in self.query("#prompt-changed").results(Static):
            w.update(data_text(self.changed_text()))
        for w in self.query("#prompt-plan").results(Static):
            w.update(data_text(plan))
        field = self.query_one("#prompt-input", Input)
        field.value = sanitize(last_note)
        field.cursor_position = len(field.value)  # where a new one has it, before the focus selects it all
        self.set_focus(None)  # as a new one: the field gets the focus (and its Focus event: the note selected)
        self.set_focus(field)

    def changed_text(self) -> str:
        """``"changed since the last deploy (2): train.py, drafter.py"`` ('' when not watched)."""
        if self.changed is None:
            return ""
        if not self.changed:
            return "no local changes since the last deploy"
        # each name cleaned on its own: joined first, an escape sequence begun in one name and ended in
        # the next (ESC ] … BEL) would be stripped whole, the names between with it
        shown = ", ".join(sanitize(f) for f in self.changed[:8]) + (f", … {len(self.changed) - 8} more" if len(self.changed) > 8 else "")
        return f"changed since the last deploy ({len(self.changed)}): {shown}"

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box", classes="modal-box"):
            yield Static("Attempt a fix", classes="modal-title")
            yield Static("What does this attempt test? (your hypothesis; it goes into the journal)")
            yield Input(value=sanitize(self.last_note), placeholder="e.g. serialising the first compile fixes the FX race", id="prompt-input")
            if self.changed is not None:
                yield Static(data_text(self.changed_text()), id="prompt-changed")
            if self.plan:
                yield Static(data_text(self.plan), id="prompt-plan", classes="modal-dim")
            yield Static("enter: run the attempt · esc: cancel", classes="modal-dim")

    def on_mount(self) -> None:
        self.query_one("#prompt-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
