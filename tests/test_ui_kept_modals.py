"""The confirmation, the hypothesis prompt and the verdict are kept and reopened (screens/kept.py), and
the footer swaps rows of keys it built before (leaks.py): a reopened modal shows, focuses and answers
exactly what a new one would, and the footer shows the keys Textual's footer would build."""

from __future__ import annotations

import io
from typing import Any

from textual.widgets import Button, Input, Static

from bench.modal_churn import _verdict, cycle
from cockpit.ui.screens import ConfirmScreen, HypothesisScreen, VerdictScreen
from cockpit.ui.screens.kept import kept_screens
from tests.test_ui_support import wait_for

SIZE = (80, 24)


def _demo() -> Any:
    from cockpit.demo import demo_config
    from cockpit.ui.app import create_app

    return create_app(demo_config(), refresh=False)


def _plain(renderable: Any) -> str:
    from rich.console import Console

    console = Console(width=120, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def _text(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


async def _open(app: Any, pilot: Any, screen: Any, answers: list[Any]) -> None:
    app.push_screen(screen, answers.append)
    await wait_for(pilot, lambda: app.screen is screen and screen.focused is not None, what="the modal, focused")


async def _closed(app: Any, pilot: Any, n: int, answers: list[Any]) -> None:
    await wait_for(pilot, lambda: len(app.screen_stack) == 1 and len(answers) == n, what="the modal closed, answered")
    await pilot.pause()


async def test_a_reopened_confirmation_shows_its_own_text_and_cancel_has_the_focus():
    app = _demo()
    answers: list[Any] = []
    async with app.run_test(size=SIZE) as pilot:
        first = ConfirmScreen("Reboot?", "everything dies", "pct reboot 200", where="on the host")
        await _open(app, pilot, first, answers)
        await pilot.press("tab")  # the focus to Yes, then close without answering yes
        await wait_for(pilot, lambda: first.focused is not None and first.focused.id == "confirm-ok", what="Yes focused")
        await pilot.press("escape")
        await _closed(app, pilot, 1, answers)

        again = ConfirmScreen("Stop the job?", "the job stops", "kill -TERM -4242", where="in container 200", yes="Stop")
        assert again is first  # kept: not composed again
        await _open(app, pilot, again, answers)
        assert (_text(again, "#confirm-title"), _text(again, "#confirm-body"), _text(again, "#confirm-where"),
                _text(again, "#confirm-command")) == ("Stop the job?", "the job stops", "in container 200", "kill -TERM -4242")
        assert str(again.query_one("#confirm-ok", Button).label) == "Stop (y)"
        assert again.focused is again.query_one("#confirm-no")  # Enter alone never destroys anything
        await pilot.press("enter")
        await _closed(app, pilot, 2, answers)
        await _open(app, pilot, ConfirmScreen("Again?", "b", "c", where="w"), answers)
        await pilot.press("y")
        await _closed(app, pilot, 3, answers)
        assert answers == [False, False, True]

        # another shape (no "where" line) is another screen, without that line
        bare = ConfirmScreen("Quit while verify runs?", "cockpit stops waiting", "", yes="Quit")
        assert bare is not first
        await _open(app, pilot, bare, answers)
        assert not bare.query("#confirm-where") and _text(bare, "#confirm-title") == "Quit while verify runs?"
        # while a kept one is open, a second one of its shape is a new screen (it goes when it closes)
        inner = ConfirmScreen("Inner?", "b", "c", yes="Quit")
        assert inner is not bare
        await pilot.press("n")
        await _closed(app, pilot, 4, answers)
        assert len(kept_screens(app)) == 2
        # two built before either is pushed are two screens
        one, two = ConfirmScreen("One?", "b", "c"), ConfirmScreen("Two?", "b", "c")
        assert one is bare and two is not one and _text(one, "#confirm-title") == "One?"


async def test_a_reopened_prompt_holds_the_new_note_selected_and_answers_it():
    app = _demo()
    answers: list[Any] = []
    async with app.run_test(size=SIZE) as pilot:
        first = HypothesisScreen("serialise the first compile", plan="deploy, restart", changed=["train.py"])
        await _open(app, pilot, first, answers)
        await pilot.press("end", "x", "y", "z")
        await wait_for(pilot, lambda: first.query_one(Input).value.endswith("xyz"), what="typed")
        await pilot.press("escape")
        await _closed(app, pilot, 1, answers)

        fresh = HypothesisScreen("pin the drafter", plan="deploy only", changed=["a.py", "b.py"])
        assert fresh is first
        await _open(app, pilot, fresh, answers)
        field = fresh.query_one(Input)
        # as in a new one: the note, all of it selected once the field has the focus (typing replaces it)
        await wait_for(pilot, lambda: tuple(field.selection) == (0, len("pin the drafter")), what="the note selected")
        assert field.value == "pin the drafter"
        assert fresh.focused is field
        assert _text(fresh, "#prompt-plan") == "deploy only"
        assert _text(fresh, "#prompt-changed") == "changed since the last deploy (2): a.py, b.py"
        await pilot.press("end", "!", "enter")
        await _closed(app, pilot, 2, answers)
        assert answers == [None, "pin the drafter!"]
        assert HypothesisScreen("n") is not first  # another shape: no plan, not watched


async def test_a_reopened_verdict_shows_the_new_one_from_the_top():
    app = _demo()
    answers: list[Any] = []
    async with app.run_test(size=SIZE) as pilot:
        v = _verdict()
        first = VerdictScreen(None, verdict=v, action="verify")
        await _open(app, pilot, first, answers)
        scroll = first.query_one("#verdict-scroll")
        scroll.scroll_end(animate=False)
        await wait_for(pilot, lambda: scroll.scroll_y > 0, what="scrolled down")
        from textual.selection import SELECT_ALL

        first.selections = {first.query_one(".modal-title", Static): SELECT_ALL}  # text selected with the mouse, left when it closes
        assert first.get_selected_text() == "verdict"
        await pilot.press("escape")
        await _closed(app, pilot, 1, answers)

        v.action = "relaunch"
        again = VerdictScreen(None, verdict=v, action="relaunch")
        assert again is first
        await _open(app, pilot, again, answers)
        await wait_for(pilot, lambda: scroll.scroll_y == 0, what="the top")
        assert not again.selections and again.get_selected_text() is None  # y copies the verdict, not an old selection
        assert "✘ relaunch FAILED (app)" in _plain(again.body.content)
        assert again.body.action == "relaunch" and str(again.query_one(".modal-title", Static).content) == "verdict"


async def test_the_footer_shows_the_keys_textuals_footer_would_and_reuses_them():
    from textual.widgets._footer import FooterKey

    app = _demo()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        footer = app.query_one("LeanFooter")

        def on_show() -> list[FooterKey]:
            return [k for k in footer.query(FooterKey) if k.display and k.parent is not None and k.parent.display]

        def shown() -> list[tuple[str, str, bool]]:
            return [(k.key_display, k.description, k.has_class("-disabled")) for k in on_show()]

        await wait_for(pilot, lambda: len(shown()) > 3, what="the footer's keys")
        main, ids = shown(), [id(k) for k in on_show()]
        for kind in ("confirm", "prompt", "verdict", "help"):
            await cycle(app, pilot, kind)
        await wait_for(pilot, lambda: shown() == main, what="the main screen's keys back")
        assert [id(k) for k in on_show()] == ids  # the same widgets: shown again, not mounted again
        # what Textual's own footer builds from the main screen's bindings now
        want: dict[str, tuple[str, str, bool]] = {}  # one key per action, the first bound (Footer.compose)
        for _, b, enabled, _ in app.screen.active_bindings.values():
            if b.show:
                want.setdefault(b.action, (app.get_key_display(b), b.description, not enabled))
        assert main[:-1] == list(want.values()) and main[-1][1] == "palette"


def _cells(strip: Any) -> list[tuple[str, Any]]:
    """A line as its cells (character, style): what the terminal shows, however it is cut into segments."""
    return [(ch, seg.style) for seg in strip for ch in seg.text]


async def _footer_lines(footer_cls: type[Any], width: int) -> list[Any]:
    """The last line of a small app with ``footer_cls``, then scrolled right (keys wider than the terminal)."""
    from textual.app import App, ComposeResult
    from textual.widgets import Footer

    class Keys(App[None]):
        BINDINGS = [(k, f"bell_{k}", f"key {k} long") for k in "abcdefgh"]

        def compose(self) -> ComposeResult:
            yield Static("main")
            yield footer_cls(compact=True)

    app = Keys()
    out: list[Any] = []
    async with app.run_test(size=(width, 6)) as pilot:
        footer = app.query_one(Footer)
        await wait_for(pilot, lambda: len(footer.query("FooterKey")) == 9, what="the keys")
        await pilot.pause()
        out += [footer.virtual_size, footer.max_scroll_x, _cells(app.screen._compositor.render_strips()[-1])]
        footer.scroll_to(x=15, animate=False)
        await wait_for(pilot, lambda: footer.scroll_x == min(15, footer.max_scroll_x), what="scrolled")
        await pilot.pause()
        out.append(_cells(app.screen._compositor.render_strips()[-1]))
    return out


async def test_the_lean_footer_draws_and_scrolls_as_textuals_footer():
    from textual.widgets import Footer

    from cockpit.ui.leaks import LeanFooter

    for width in (40, 100, 160):
        assert await _footer_lines(LeanFooter, width) == await _footer_lines(Footer, width), width
