"""The base of the TUI's modal screens: the dimmed screen behind is a picture, renewed when it changes.

Textual draws a modal with a translucent background over the screen below it: on every repaint of
the modal (six or seven per open and close, and each time the screen below repaints anything) it
renders the whole screen below, every pane, and tints it (``textual.renderables.BackgroundScreen``):
~80 ms of CPU per modal at 160x45.  Here the modal is opaque and draws, as its own background, a
picture of the screen below tinted exactly as Textual tints it.  Textual still lays out and paints
the screen below (it stays "current" under a modal) and tells the modal which regions changed; the
modal notes it and renews the picture once the screen below has been quiet for :data:`CHECK_S`
seconds (after it settles under a new modal: focus, the footer's keys), or every :data:`RENEW_S`
seconds while it keeps changing (a streaming log behind a modal moves once a second).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar, TypeVar

from rich.console import RenderableType
from textual import events
from textual.color import Color
from textual.geometry import Region
from textual.renderables.background_screen import BackgroundScreen
from textual.screen import ModalScreen, Screen
from textual.strip import Strip, StripRenderable

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["BackdropModal", "CHECK_S", "RENEW_S"]

ResultT = TypeVar("ResultT")

#: how often an open modal looks whether the screen below it changed (and settled), in seconds
CHECK_S = 0.1
#: how often at most the picture is renewed while the screen below keeps changing, in seconds
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
    _below_changed = 0.0  # when the screen below last repainted something the picture lacks (time.monotonic)
    _taken = 0.0  # when the picture was taken

    def on_mount(self) -> None:
        self.set_interval(CHECK_S, self._check_below)

    def on_screen_resume(self) -> None:
        self._backdrop, self._below_changed = None, 0.0

    def on_screen_suspend(self) -> None:
        self._backdrop = None  # a kept modal (help) holds no picture of a screen while it is closed

    def on_resize(self, event: events.Resize) -> None:
        self._backdrop = None

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        if regions and not layout and not recompose:
            # Textual's only call with regions: the screen below repainted them (Screen._compositor_refresh)
            self._below_changed = time.monotonic()
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _check_below(self) -> None:
        if not self._below_changed or self._backdrop is None:
            return
        now = time.monotonic()
        if now - self._below_changed >= CHECK_S or now - self._taken >= RENEW_S:
            self.renew_backdrop()

    def renew_backdrop(self) -> None:
        """Take the picture of the screen below again on the next repaint (a screenshot shows it as it is now)."""
        self._backdrop = None
        self.refresh()

    def _below(self) -> Screen[object] | None:
        stack = self.app.screen_stack
        return stack[-2] if len(stack) > 1 and stack[-1] is self else None

    def render(self) -> RenderableType:
        if self._backdrop is None:
            below = self._below()
            if below is None:
                return super().render()
            self._below_changed, self._taken = 0.0, time.monotonic()
            tint: Color = self.get_component_styles("backdrop--tint").background
            strips = below._compositor.render_strips()
            self._backdrop = StripRenderable(
                [Strip(BackgroundScreen.process_segments(strip, tint), strip.cell_length) for strip in strips]
            )
        return self._backdrop
