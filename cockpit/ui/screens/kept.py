"""Modal screens that are kept and reopened with new content instead of composed again.

Composing a modal (its widgets mounted, styled and laid out for the first time) was half of what
opening it cost.  A class built with :class:`KeptModalMeta` answers ``ScreenClass(...)``, while an
app runs, with the screen of that class (and *shape*, :meth:`KeptModal.kept_shape`: which optional
widgets it has) that the app already composed, once that one is closed, after giving it the new
content (:meth:`KeptModal.reopen`: its widgets updated in place, the focus where a new one puts it).
Callers are unchanged: ``app.push_screen(ConfirmScreen(...), callback)`` pushes a screen that
shows what it was built with, whether it is new or kept.  A kept screen is installed in the app
(Textual does not remove an installed screen when it is popped); one per class and shape, so a few
per app.  Outside a running app (a test building a screen to read its text) every call builds a new one.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, TypeVar

from textual._context import active_app
from textual.app import App
from textual.message_pump import _MessagePumpMeta

from .backdrop import BackdropModal

__all__ = ["KeptModal", "KeptModalMeta", "kept_screens"]

ResultT = TypeVar("ResultT")

#: the app's attribute that holds its kept screens (on the app: they go with it)
_ATTR = "_cockpit_kept_modals"


def kept_screens(app: App[Any]) -> dict[tuple[type, Hashable], KeptModal[Any]]:
    """The screens ``app`` keeps, per (class, shape) (tests, the memory bench)."""
    kept: dict[tuple[type, Hashable], KeptModal[Any]] | None = getattr(app, _ATTR, None)
    if kept is None:
        kept = {}
        setattr(app, _ATTR, kept)
    return kept


def _running_app() -> App[Any] | None:
    try:
        app = active_app.get()
    except LookupError:
        return None
    return app if app.is_running else None


class KeptModalMeta(_MessagePumpMeta):  # Textual's metaclass (every widget's), extended
    """``Cls(*args)`` answers the app's kept, closed screen of that class and shape, reopened with ``args``."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:  # Any: each screen's own signature
        app = _running_app()
        shape = getattr(cls, "kept_shape", None)  # KeptModal's classmethod (the metaclass is its class's)
        if app is not None and shape is not None:
            kept = kept_screens(app).get((cls, shape(*args, **kwargs)))
            if kept is not None and kept.closed_in(app):
                kept.reset()
                kept.reopen(*args, **kwargs)
                # until it is pushed (the caller's next step): a second call before that gets a new screen
                kept._claimed = True
                app.call_later(kept.unclaim)
                return kept
        return super().__call__(*args, **kwargs)


class KeptModal(BackdropModal[ResultT], metaclass=KeptModalMeta):
    """A modal the app keeps once composed, and reopens (see the module)."""

    _open = False  # between its ScreenResume and its ScreenSuspend
    _claimed = False  # reopened for a caller that has not pushed it yet

    @classmethod
    def kept_shape(cls, *args: Any, **kwargs: Any) -> Hashable:  # Any: each screen's own signature
        """What tells apart the screens built from these arguments that have different widgets."""
        return ()

    def reset(self) -> None:
        """What a person left on it as a new screen has it: no text selected, nothing maximized."""
        if self.selections:
            self.clear_selection()
        if self.maximized is not None:
            self.minimize()

    def reopen(self, *args: Any, **kwargs: Any) -> None:  # Any: each screen's own signature
        """Show what a new screen built from these arguments would, the focus included."""
        raise NotImplementedError

    def closed_in(self, app: App[Any]) -> bool:
        """Kept by ``app``, composed, and closed: free to reopen."""
        return (self.app is app and self.is_attached and not self._closing and not self._open and not self._claimed
                and app.is_screen_installed(self) and all(self not in stack for stack in app._screen_stacks.values()))

    def unclaim(self) -> None:
        self._claimed = False

    def on_mount(self) -> None:
        app, key = self.app, (type(self), self.kept_shape_now())
        kept = kept_screens(app)
        if key not in kept:  # else the kept one was open: this one goes when it closes
            kept[key] = self
            app.install_screen(self, f"-kept-{type(self).__name__}-{id(self):x}")

    def kept_shape_now(self) -> Hashable:
        """This screen's shape (what :meth:`kept_shape` answers for the arguments it shows)."""
        return ()

    def on_screen_resume(self) -> None:
        self._open = True

    def on_screen_suspend(self) -> None:
        self._open = False
