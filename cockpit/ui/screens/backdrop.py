"""The base of the TUI's modal screens: the dimmed screen behind is a picture, renewed when it changes.

Textual draws a modal with a translucent background over the screen below it: on every repaint of
the modal (six or seven per open and close, and each time the screen below repaints anything) it
renders the whole screen below, every pane, and tints it (``textual.renderables.BackgroundScreen``):
~80 ms of CPU per modal at 160x45.  Here the modal is opaque and draws, as its own background, a
picture of the screen below tinted exactly as Textual tints it.  Textual still lays out and paints
the screen below (it stays "current" under a modal) and tells the modal which regions changed; the
modal notes it and renews the picture once the screen below has been quiet for :data:`CHECK_S`
seconds (after it settles under a new modal: focus, the footer's keys), or every :data:`RENEW_S`
seconds while it keeps changing (a streaming log behind a modal moves once a second).  The picture
is made into the modal's lines directly, a style looked up per segment, line for line what Textual
would render of it as a Rich renderable (tests/test_ui_backdrop_picture.py compares the two).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar, TypeVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.color import Color
from textual.geometry import Region
from textual.renderables.background_screen import BackgroundScreen
from textual.screen import ModalScreen, Screen
from textual.strip import Strip
from textual.widget import _RenderCache

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["BackdropModal", "CHECK_S", "RENEW_S"]

ResultT = TypeVar("ResultT")

#: how often an open modal looks whether the screen below it changed (and settled), in seconds
CHECK_S = 0.1
#: how often at most the picture is renewed while the screen below keeps changing, in seconds
RENEW_S = 1.0
#: how many distinct styles of the screen below a modal keeps worked out (a few hundred in practice)
_STYLES = 4096


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

    _backdrop: list[Strip] | None = None  # the picture: this screen's lines
    _styles_key: tuple[Color, Style, Style | None] | None = None  # what the styles below were worked out for
    _styles: dict[Style | None, Style] = {}  # noqa: RUF012 - replaced per instance; a style below -> its style in the picture
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

    def _picture(self) -> list[Strip] | None:
        """The screen below, tinted, as this screen's lines (None: no screen below, or not this one's size).

        What Textual makes of a ``StripRenderable`` of the tinted strips (``Visual.to_strips``: each
        segment's style added to this screen's base style, links styled) without going through Rich:
        each distinct style is worked out once (:meth:`_styled`), a picture is a dict lookup a segment."""
        below = self._below()
        if below is None:
            return None
        width, height = self.size
        strips = below._compositor.render_strips()
        if len(strips) != height or any(strip.cell_length != width for strip in strips):
            return None
        self._below_changed, self._taken = 0.0, time.monotonic()
        tint: Color = self.get_component_styles("backdrop--tint").background
        base = self.visual_style.rich_style
        link = self.link_style if self.auto_links else None
        key = (tint, base, link)
        if self._styles_key != key or len(self._styles) > _STYLES:
            self._styles_key, self._styles = key, {}
        styled = self._styles
        pictured = []
        for strip in strips:
            segments = []
            for text, style, control in strip:
                if control:
                    segments.append(Segment(text, style, control))  # as Textual's tint, then Rich's crop, pass them
                    continue
                final = styled.get(style)
                if final is None:
                    final = styled[style] = self._styled(style, tint, base, link)
                segments.append(Segment(text, final))
            pictured.append(Strip(segments, width))
        return pictured

    @staticmethod
    def _styled(style: Style | None, tint: Color, base: Style, link: Style | None) -> Style:
        """A segment's style in the picture: tinted as Textual tints a screen below a modal, on this screen's base style."""
        tinted = next(iter(BackgroundScreen.process_segments([Segment(" ", style)], tint))).style or Style()
        final = base + tinted if base else tinted  # widget._Styled: the base style under every segment
        if link and final._meta is not None and "@click" in final.meta:
            final = final + link
        return final

    def _render_content(self) -> None:  # Textual's: the lines of the whole screen, at its size
        if self._backdrop is None:
            picture = self._picture()
            if picture is None:
                super()._render_content()
                return
            self._backdrop = picture
        self._render_cache = _RenderCache(self.size, self._backdrop)
        self._dirty_regions.clear()
