"""The app's key actions, delegated to its controllers: one ``action_<name>`` per key, made once.

Textual looks a binding's action up as ``action_<name>`` on a DOM node (the focused widget's
chain, the screen, the app), so the app needs the methods while the code lives in plain
controller objects (:class:`~cockpit.ui.app.CockpitApp`'s docstring says why).  :func:`route`
puts them on the app class: each ``action_*`` method of a controller class becomes an app method
that calls it on the app's controller of that name, and each engine action of the key registry
that no controller handles by name calls :meth:`~cockpit.ui.keys.TargetActions.act` with its id.
A controller method that would shadow another one is an error at import, never a silent choice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.keymap import ACTIONS
from .keys import TargetActions
from .settings import Settings
from .target_keys import Targets
from .user_keys import UserActions
from .views import Views

if TYPE_CHECKING:
    from .host import CockpitHost

__all__ = ["CONTROLLERS", "route"]

#: the app's attribute → its controller's class (whose ``action_*`` methods the keys call)
CONTROLLERS: dict[str, type] = {"actions": TargetActions, "views": Views, "targets": Targets, "settings": Settings, "user": UserActions}

#: a key's action as the app's method: Textual passes a binding's parameters (at most one here)
AppAction = Callable[..., object]


def _delegate(controller: str, method: str) -> AppAction:
    def action(app: CockpitHost, *params: object) -> object:
        handler: Callable[..., object] = getattr(getattr(app, controller), method)  # the one look-up by name
        return handler(*params)  # an async handler's coroutine is awaited by Textual

    action.__name__ = action.__qualname__ = method
    action.__doc__ = f"The key's action: ``{controller}.{method}``."
    return action


def _engine(engine_id: str) -> AppAction:
    def action(app: CockpitHost) -> None:
        app.actions.act(engine_id)

    action.__doc__ = f"The key of engine action {engine_id!r}: ``actions.act({engine_id!r})``."
    return action


def routes() -> dict[str, AppAction]:
    """Every ``action_<name>`` the app gets, by method name."""
    out: dict[str, AppAction] = {}
    for attr, cls in CONTROLLERS.items():
        for name in vars(cls):
            if name.startswith("action_"):
                if name in out:
                    raise TypeError(f"{cls.__name__}.{name}: another controller has it")
                out[name] = _delegate(attr, name)
    for a in ACTIONS:
        name = f"action_{a.action.split('(')[0]}"
        if a.engine is not None and name not in out:
            out[name] = _engine(a.engine)
    return out


def route(app_cls: type[CockpitHost]) -> None:
    for name, fn in routes().items():
        fn.__name__ = fn.__qualname__ = name
        setattr(app_cls, name, fn)
