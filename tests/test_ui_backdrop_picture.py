"""The picture behind a modal (screens/backdrop.py) is built without Rich: line for line, segment for
segment, what Textual makes of the tinted screen below rendered as a Rich renderable."""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from textual.renderables.background_screen import BackgroundScreen
from textual.strip import Strip, StripRenderable
from textual.visual import Visual, visualize

from bench.modal_churn import open_modal
from cockpit.ui.screens.backdrop import BackdropModal
from tests.test_ui_support import wait_for


def _through_rich(modal: BackdropModal[Any]) -> list[list[Segment]]:
    """The old way: a StripRenderable of the tinted strips, through Textual's Visual (Rich) path."""
    below = modal.app.screen_stack[-2]
    tint = modal.get_component_styles("backdrop--tint").background
    strips = [Strip(BackgroundScreen.process_segments(s, tint), s.cell_length) for s in below._compositor.render_strips()]
    width, height = modal.size
    lines = Visual.to_strips(modal, visualize(modal, StripRenderable(strips)), width, height, modal.visual_style)
    return [list(line) for line in lines]


async def _check(app: Any, pilot: Any, kind: str) -> None:
    screen = open_modal(app, kind)
    await wait_for(pilot, lambda: isinstance(app.screen, screen) and app.screen._backdrop is not None, what=f"the {kind} modal's picture")
    modal = app.screen
    assert isinstance(modal, BackdropModal)

    def same() -> bool:
        """The picture, taken again now, is what the old way renders of the screen below now."""
        modal._backdrop = None
        modal._render_content()
        return modal._backdrop is not None and [list(line) for line in modal._backdrop] == _through_rich(modal)

    await wait_for(pilot, same, what="the picture as Textual renders it (once the screen below settled: the footer's keys)")
    picture = modal._backdrop
    assert picture is not None and len(picture) == 45
    assert any(seg.style is not None and seg.style.bgcolor is not None for seg in picture[0])
    await pilot.press("escape")
    await wait_for(pilot, lambda: len(app.screen_stack) == 1, what="the modal closed")


async def test_the_picture_is_what_textual_renders_of_the_tinted_screen_below():
    from cockpit.demo import demo_config
    from cockpit.ui.app import create_app

    app = create_app(demo_config(), refresh=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        for kind in ("confirm", "verdict"):
            await _check(app, pilot, kind)
