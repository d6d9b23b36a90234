"""The TUI's memory stays flat: opening and closing modal screens leaves nothing alive.

Counts live objects after a full collection (deterministic, unlike RSS): widgets, screens, footer
keys and Textual's per-widget style caches must come back to their baseline after every kind of
modal was opened and closed many times.  Before the fix each cycle left ~9 dead ``FooterKey``
widgets (Textual issue #6666) and pinned the closed screen's widgets' renders through
``StylesCache.get_inner_outer``'s ``lru_cache`` (Textual issue #6665); see ``cockpit/ui/leaks.py``.
"""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from bench.modal_churn import KINDS, churn, cycle, live_counts
from cockpit.ui.leaks import LeanFooter, prune_closed_watchers, unpin_styles_caches

SIZE = (80, 24)
CYCLES = 12  # 2 of each kind after the warm-up: the counts come back exactly, so a leak of one footer key per cycle shows as +12


async def test_modal_cycles_leave_no_widget_alive():
    from cockpit.demo import demo_config
    from cockpit.ui.app import create_app

    app = create_app(demo_config(), refresh=False)
    async with app.run_test(size=SIZE) as pilot:
        for kind in KINDS:  # warm: each screen's first open creates class-level caches
            await cycle(app, pilot, kind)
        before = live_counts()
        await churn(app, pilot, CYCLES)
        after = live_counts()
        footer = app.query_one(Footer)
        assert isinstance(footer, LeanFooter)
        watchers = getattr(footer, "__watchers", {}).get("compact", [])
    for what in ("widgets", "screens", "footer keys", "style caches"):
        assert after[what] <= before[what], f"{what}: {before[what]} before {CYCLES} modal cycles, {after[what]} after"
    assert after["strips"] <= before["strips"] * 1.1, f"strips {before['strips']} → {after['strips']}"
    assert len(watchers) <= after["footer keys"], f"the footer watches {len(watchers)} keys, {after['footer keys']} are alive"


class _Modal(ModalScreen[None]):
    BINDINGS = [("escape", "app.pop_screen", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box"):
            yield Static("a modal")


class _Bare(App[None]):
    BINDINGS = [("x", "bell", "Bell"), ("y", "toggle_dark", "Dark")]

    def __init__(self, footer: type[Footer]) -> None:
        super().__init__()
        self.footer_cls = footer

    def compose(self) -> ComposeResult:
        yield Static("main")
        yield self.footer_cls()


async def test_lean_footer_watches_only_its_live_keys():
    app = _Bare(LeanFooter)
    async with app.run_test() as pilot:
        for _ in range(12):
            app.push_screen(_Modal())
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
        footer = app.query_one(Footer)
        keys = list(footer.query("FooterKey"))
        watched = [owner for owner, _ in getattr(footer, "__watchers", {}).get("compact", [])]
        bound = [k for k in keys if not k.has_class("-command-palette")]  # the palette key is not data-bound
        assert len(bound) == 2 and len(watched) == len(bound) and set(map(id, watched)) == set(map(id, bound))


def test_prune_closed_watchers_drops_closed_owners_only():
    class Owner:
        def __init__(self, closing: bool = False, closed: bool = False) -> None:
            self._closing, self._closed = closing, closed

    live, closing, closed = Owner(), Owner(closing=True), Owner(closed=True)
    obj: Any = type("Observed", (), {})()
    setattr(obj, "__watchers", {"compact": [(live, print), (closing, print), (closed, print)], "other": [(closed, print)]})
    assert prune_closed_watchers(obj) == 3
    assert getattr(obj, "__watchers") == {"compact": [(live, print)], "other": []}
    assert prune_closed_watchers(object()) == 0  # nothing watched: nothing to do


async def test_style_caches_of_removed_widgets_are_released():
    from textual._styles_cache import StylesCache

    assert unpin_styles_caches() and unpin_styles_caches()  # in place, and idempotent
    app = _Bare(LeanFooter)
    async with app.run_test() as pilot:
        box = Vertical()
        await app.mount(box)
        await pilot.pause()
        base = live_counts()["style caches"]
        for round_ in range(6):
            await box.mount_all([Static(f"card {round_}.{i}", classes="card") for i in range(20)])
            await pilot.pause()
            await box.remove_children()
            await pilot.pause()
        # the container's NodeList caches its last children until they change again: one round, not six
        left = live_counts()["style caches"] - base
        assert left <= 20, f"{left} style caches of removed widgets alive (StylesCache.get_inner_outer's lru_cache pins them)"
        inner, outer = StylesCache.get_inner_outer(None, app.screen.styles.background, app.screen.styles.background)  # type: ignore[arg-type]
        assert inner.background is not None and outer.background is not None


TRACEBACK = """Traceback (most recent call last):
  File "/workspace/train.py", line 412, in step
    loss = model(batch)
RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB""".splitlines()


async def test_log_pane_forgets_marks_of_lines_that_left_the_ring(tmp_path):
    from cockpit.core.probes.classifier import Classifier
    from cockpit.ui.app import create_app
    from cockpit.ui.panes import LogPane
    from tests.test_ui_support import local_config, make_engine

    ring = 200
    cfg = local_config(tmp_path, extra=f"log_lines = {ring}")
    app = create_app(cfg, engine=make_engine(cfg), refresh=False)
    app.owns_engine = True
    clf = Classifier()
    first_no, batches = 1, 40
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(LogPane)
        for b in range(batches):  # 40 batches of 100 lines: a traceback (an error) in every 25 lines
            lines = []
            for i in range(100):
                lines.extend(TRACEBACK if i % 25 == 0 else [f"step {b * 100 + i} | loss 2.0"])
            matches = clf.feed_many(lines)
            pane.feed("/job.log", first_no, lines, matches)
            first_no += len(lines)
            await pilot.pause()
        log = pane.log_view
        oldest = pane.last_no - 3 * ring  # a window a few rings wide: pruning runs when the maps double
        assert len(log.marks) <= 2 * ring + 64 + 100 and min(log.marks) >= oldest, (len(log.marks), min(log.marks), pane.last_no)
        assert len(pane.chains) <= 2 * ring + 64 and len(pane.errors) <= 2 * ring + 64
        errors_seen = batches * 4
        assert len(pane.errors) + pane.errors_dropped == errors_seen and pane.errors_dropped > 0
        assert pane.errors[0] == 1, "the first error (the title names it) is never forgotten"
        assert f"✘ {errors_seen} errors:" in str(pane.border_title), pane.border_title
        # what is still in the ring keeps its marks and its traceback for copying
        last_err = pane.errors[-1]
        assert log.marks[last_err].kind == "trace" and any(m.line_no == last_err + 3 for m in pane.chains.values())
