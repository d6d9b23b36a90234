"""Workarounds for two Textual memory leaks that made every modal screen cost ~0.4 MiB for good.

Measured on Textual 8.2.8 with the demo app: 100 help-screen open/close cycles grew RSS
75.8 → 111.3 MiB and left ~186,000 ``FIFOCache`` objects (7 per ``Strip``) alive.  Two upstream
bugs, both open when this was written; each workaround is a no-op once Textual fixes its bug.

1. **The footer keeps its old keys** (https://github.com/Textualize/textual/issues/6666).
   ``Footer`` rebuilds its ``FooterKey`` children whenever the active bindings change, that is on
   every modal open and close.  Each key is built with ``.data_bind(compact=Footer.compact)``,
   which stores ``(key, callback)`` in the *footer's* watcher list, and Textual prunes that list
   only when ``compact`` itself changes (never, in cockpit).  So every cycle left ~9 dead keys
   alive with their styles and render caches.  :class:`LeanFooter` drops the watchers of closed
   widgets (the very test Textual applies when the attribute changes) before each rebuild.

   Minimal reproduction (the count grows by the number of footer keys per cycle)::

       from textual.app import App
       from textual.screen import ModalScreen
       from textual.widgets import Footer

       class M(ModalScreen): BINDINGS = [("escape", "app.pop_screen", "Close")]
       class A(App):
           BINDINGS = [("x", "bell", "Bell")]
           def compose(self): yield Footer()

       async def main():
           app = A()
           async with app.run_test() as pilot:
               for _ in range(50):
                   app.push_screen(M()); await pilot.pause()
                   app.pop_screen(); await pilot.pause()
               print(len(getattr(app.query_one(Footer), "__watchers")["compact"]))  # ~100, not 2

2. **The styles cache pins whole widgets' renders** (https://github.com/Textualize/textual/issues/6665).
   ``StylesCache.get_inner_outer`` is an instance method under ``functools.lru_cache(1024)``, so
   the cache key holds the ``StylesCache`` (every widget has one, with its rendered lines) of the
   last 1,024 distinct (widget, colours) calls: every closed screen's widgets stay alive until
   1,024 newer entries push them out.  :func:`unpin_styles_caches` swaps it for the same function
   cached on the two colours only (it never used ``self``).

   Minimal reproduction: mount and remove a few ``Static`` widgets in a loop, ``gc.collect()``,
   and count ``StylesCache`` instances: it climbs to ~1,024 (``get_inner_outer.cache_info()``).

``tests/test_ui_memory.py`` fails if either leak comes back (it counts live widgets and style
caches across modal cycles); ``python -m bench modals`` measures RSS over 1,000 cycles.
"""

from __future__ import annotations

from collections.abc import Hashable
from functools import lru_cache
from typing import Any

from textual.app import ComposeResult
from textual.color import Color
from textual.compose import compose
from textual.screen import Screen
from textual.style import Style
from textual.widget import Widget
from textual.widgets import Footer

__all__ = ["LeanFooter", "prune_closed_watchers", "unpin_styles_caches"]


def prune_closed_watchers(obj: Any) -> int:  # Any: Textual's private reactive internals
    """Drop the watchers of ``obj``'s reactives whose owner is closed or closing; how many went.

    Textual keeps ``(owner, callback)`` in ``obj.__watchers[attribute]`` and prunes closed owners
    only when that attribute changes (Textual issue #6666)."""
    watchers: dict[str, list[tuple[Any, Any]]] = getattr(obj, "__watchers", None) or {}  # Any: Textual internals
    dropped = 0
    for entries in watchers.values():
        keep = [(owner, cb) for owner, cb in entries
                if not (getattr(owner, "_closing", False) or getattr(owner, "_closed", False))]
        dropped += len(entries) - len(keep)
        entries[:] = keep
    return dropped


class KeyRow(Widget):
    """One row of a :class:`LeanFooter`'s keys (all but the palette's): as wide as they are, laid out as the footer lays them out."""

    DEFAULT_CSS = """
    KeyRow {
        layout: horizontal;
        width: auto;
        height: 1;
    }
    """


class LeanFooter(Footer):
    """Textual's ``Footer``, minus the dead keys of its earlier rebuilds (Textual issue #6666), that
    swaps rows of keys it built before instead of building its keys again.

    Textual's footer removes its keys and mounts new ones whenever the screen's bindings change:
    twice per modal (under a modal the app's keys are off, ``CockpitApp.check_action``; then they
    are back), ~10 ``FooterKey`` mounts each.  This one keeps the row of keys it built for each set
    of bindings (the last :data:`ROWS`): a :class:`KeyRow` (and the palette's key), hidden while another row shows: a modal's
    open and close each show one row and hide another (its keys keep their rendered lines).  A row
    looks as Textual's footer would have built it then (the snapshots in tests/test_ui_snapshots.py)."""

    #: how many rows of keys are kept (the main screen's, the one under a modal, a few more)
    ROWS = 8

    _row_shown: Hashable = None  # the bindings of the row on show (None: none yet)

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # Any: Footer's own signature
        super().__init__(*args, **kwargs)
        self._rows: dict[Hashable, list[Widget]] = {}  # a row: its keys' KeyRow, and the palette's key

    def compose(self) -> ComposeResult:
        # a (re)compose has removed (and closed) every key: the rows are built again as they are needed
        prune_closed_watchers(self)
        self._rows.clear()
        self._row_shown = None
        if self._bindings_ready:
            self.call_after_refresh(self._show_row)
        yield from ()

    def bindings_changed(self, screen: Screen[Any]) -> None:  # Any: any screen's result
        self._bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            # at once, not after the next refresh (Textual's): the swap joins the repaint that follows a modal's
            # close (one full repaint, not a full one then the footer's), and the picture taken under a new modal
            self._show_row()

    def _bindings_key(self) -> Hashable:
        """Everything Textual's ``Footer.compose`` builds its keys from, hashable."""
        app, active = self.app, self.screen.active_bindings
        shown = tuple((b, enabled, tooltip, app.get_key_display(b)) for _, b, enabled, tooltip in active.values() if b.show)
        palette = active.get(app.COMMAND_PALETTE_BINDING) if self.show_command_palette and app.ENABLE_COMMAND_PALETTE else None
        return shown, palette, self.compact

    def _show_row(self) -> None:
        if not self.is_attached or self._closing:
            return
        key = self._bindings_key()
        if key == self._row_shown:
            return
        with self.app.batch_update():
            for w in self._rows.get(self._row_shown, ()):
                w.display = False
            row = self._rows.pop(key, None)
            if row is None:
                prune_closed_watchers(self)
                keys = compose(self, Footer.compose(self))
                # the palette's key stays the footer's own (docked at its right); the others in a row as wide as they are
                docked = [k for k in keys if k.has_class("-command-palette")]
                row = [KeyRow(*[k for k in keys if k not in docked]), *docked]
                self.mount_all(row)
            else:
                for w in row:
                    w.display = True
            self._rows[key] = row  # the most recently shown last
            self._row_shown = key
            while len(self._rows) > self.ROWS:
                self.remove_children(self._rows.pop(next(iter(self._rows))))


@lru_cache(1024)
def _inner_outer(base_background: Color, background: Color) -> tuple[Style, Style]:
    return Style(background=base_background + background), Style(background=base_background)


def _get_inner_outer(self: Any, base_background: Color, background: Color) -> tuple[Style, Style]:  # Any: Textual's StylesCache, patched
    return _inner_outer(base_background, background)


def unpin_styles_caches() -> bool:
    """Make ``StylesCache.get_inner_outer`` cache on its colours only (Textual issue #6665).

    Idempotent.  Changes nothing (answers False) unless the method is still an ``lru_cache`` over
    ``self`` that gives the same answer as the replacement: a Textual that fixed or changed it is
    left alone.  True when the replacement is (now) in place."""
    from textual._styles_cache import StylesCache

    current = StylesCache.__dict__.get("get_inner_outer")
    if current is _get_inner_outer:
        return True
    if current is None or not hasattr(current, "cache_clear"):
        return False
    probe = (Color(10, 20, 30), Color(200, 100, 50, 0.5))
    try:
        same = current(object(), *probe) == _inner_outer(*probe)
    except (TypeError, ValueError, AttributeError):  # a changed signature: not the function we replace
        return False
    if not same:
        return False
    current.cache_clear()
    setattr(StylesCache, "get_inner_outer", _get_inner_outer)  # noqa: B010 - replacing Textual's method on purpose
    return True
