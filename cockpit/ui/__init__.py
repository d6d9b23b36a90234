"""cockpit's Textual TUI.  ``create_app(cfg)`` builds it; ``cockpit/cli/tui.py`` runs it.

Layout: ``app.py`` wires (the app's state, panes and message handlers) and holds the controllers:
``keys.py`` (keys that act on the target), ``views.py`` (keys that change what is shown),
``target_keys.py`` (several targets), ``settings.py`` (themes, keymap, live reload),
``user_keys.py`` (the user's ``[[actions]]``), ``polling.py``, each typed by what it uses of the
app (``host.py``); ``routes.py`` gives the app one ``action_*`` per key, delegated to them.
``panes/`` (status line, verdict strip, processes, log, GPUs, metrics, history), ``screens/``
(help, confirm, hypothesis prompt, verdict detail, stacks), ``messages.py``, ``bindings.py``
(Textual bindings from the core's key registry), ``themes.py`` (theme files), ``driver.py`` (calls
the engine, typed as :class:`cockpit.core.face.EngineFace`), ``styles.tcss`` ($variables only).
``cockpit.core`` never imports any of this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["create_app", "CockpitApp"]

if TYPE_CHECKING:  # pragma: no cover
    from .app import CockpitApp, create_app


def __getattr__(name: str) -> Any:  # Any: whatever the lazily imported module holds
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(name)
