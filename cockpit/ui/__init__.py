"""cockpit's Textual TUI.  ``create_app(cfg)`` builds it; ``cockpit/cli/tui.py`` runs it.

Layout: ``app.py`` wires; ``panes/`` (status line, verdict strip, processes, log, GPUs, history),
``screens/`` (help, confirm, hypothesis prompt, verdict detail), ``messages.py``, ``actions.py``
(the one registry of keys), ``themes.py`` (theme files), ``driver.py`` (calls the engine),
``styles.tcss`` ($variables only).  ``cockpit.core`` never imports any of this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["create_app", "CockpitApp"]

if TYPE_CHECKING:  # pragma: no cover
    from .app import CockpitApp, create_app


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(name)
