"""The base of the TUI's modal screens: the dimmed screen behind is a picture, renewed when it changes.

Textual draws a modal with a translucent background over the screen below it: on every repaint of
the modal (six or seven per open and close) it renders the whole screen below, every pane, and
tints it (``textual.renderables.BackgroundScreen``): ~80 ms of CPU per modal at 160x45.  Here the
modal is opaque to Textual (so it composites nothing behind it) and draws, as its own background, a
picture of the screen below tinted exactly as Textual tints it.  The picture is taken on the
modal's first repaint and renewed when the screen below changed: checked every :data:`CHECK_S`
seconds (new widgets to repaint, a layout to do: the footer showing the modal's keys), and every
:data:`RENEW_S` seconds while anything below waits to be repainted (a streaming log behind a modal
moves once a second).
"""

from __future__ import annotations

import time
from typing import ClassVar, TypeVar

from rich.console import RenderableType
from textual import events
from textual.color import Color
from textual.renderables.background_screen import BackgroundScreen
from textual.screen import ModalScreen, Screen
from textual.strip import Strip, StripRenderable

__all__ = ["BackdropModal", "CHECK_S", "RENEW_S"]

ResultT = TypeVar("ResultT")

#: how often an open modal looks whether the screen below it changed, in seconds
CHECK_S = 0.1
#: how often the picture is renewed while the same widgets below keep changing (a streaming log), in seconds
RENEW_S = 1.0


class BackdropModal(ModalScreen[ResultT]):
    """A modal screen whose dimmed backdrop is a picture of the screen below, renewed once a second."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"backdrop--tint"}
    DEFAULT_CSS = """
    BackdropModal {
        background: $background;
    }
    BackdropModal > .backdrop--tint {
        background: $background 60%;
    }
    BackdropModal:ansi > .backdrop--tint {
        background: transparent;
    }
    """

    _backdrop: StripRenderable | None = None
    _seen: tuple[int, bool] = (0, False)  # what was waiting below when the picture was taken
    _taken: float = 0.0

    def on_mount(self) -> None:
        self.set_interval(CHECK_S, self._check_below)

    def _check_below(self) -> None:
        below = self._below()
        if below is None or self._backdrop is None:
            return
        waiting = (len(below._dirty_widgets), below._layout_required)
        if waiting != self._seen or (waiting[0] and time.monotonic() - self._taken >= RENEW_S):
            self.renew_backdrop()

    def renew_backdrop(self) -> None:
        """Take the picture of the screen below again on the next repaint (a screenshot shows it as it is now)."""
        self._backdrop = None
        self.refresh()

    def on_screen_resume(self) -> None:
        self._backdrop = None

    def on_resize(self, event: events.Resize) -> None:
        # as Textual does for the screens behind a translucent modal: lay the screen below out again
        self._backdrop = None
        if (below := self._below()) is not None:
            below._screen_resized(event.size)

    def _below(self) -> Screen[object] | None:
        stack = self.app.screen_stack
        return stack[-2] if len(stack) > 1 and stack[-1] is self else None

    def render(self) -> RenderableType:
        if self._backdrop is None:
            below = self._below()
            if below is None:
                return super().render()
            if below._layout_required:  # it is not the current screen: Textual leaves its layout for its resume
                below._refresh_layout()
            self._seen, self._taken = (len(below._dirty_widgets), below._layout_required), time.monotonic()
            tint: Color = self.get_component_styles("backdrop--tint").background
            strips = below._compositor.render_strips()
            self._backdrop = StripRenderable(
                [Strip(BackgroundScreen.process_segments(strip, tint), strip.cell_length) for strip in strips]
            )
        return self._backdrop
