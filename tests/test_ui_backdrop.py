"""The dimmed screen behind a modal (cockpit/ui/screens/backdrop.py): a picture, renewed when that screen changes."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from cockpit.ui.screens.backdrop import BackdropModal
from tests.test_ui_support import wait_for


class _Modal(BackdropModal[None]):
    DEFAULT_CSS = "_Modal { align: center middle; } _Modal > Static { width: 20; height: 3; }"

    def compose(self) -> ComposeResult:
        yield Static("the modal", id="box")


class _App(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("before", id="main-text")


def shown(app: App[None]) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips())


async def test_the_picture_behind_a_modal_follows_the_screen_below_dimmed() -> None:
    app = _App()
    async with app.run_test(size=(60, 12)) as pilot:
        modal = _Modal()
        app.push_screen(modal)
        await wait_for(pilot, lambda: app.screen is modal and "before" in shown(app), what="the modal over the main screen")
        assert "the modal" in shown(app)
        app.screen_stack[0].query_one("#main-text", Static).update("after")
        await wait_for(pilot, lambda: "after" in shown(app), timeout=10, what="the picture renewed with the main screen's change")
        assert modal.styles.background.a == 1  # opaque: Textual composites nothing behind it
        modal.dismiss(None)
        await wait_for(pilot, lambda: len(app.screen_stack) == 1 and "after" in shown(app), what="the main screen again")
