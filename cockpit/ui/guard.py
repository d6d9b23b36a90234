"""One guard for handlers that touch widgets.

A message can arrive after the panes it updates were removed (the app is closing, the screen is
being rebuilt): the handler then has nothing to do.  :func:`while_mounted` turns the two exceptions
that mean so into a debug log line instead of a crash: ``NoMatches`` (the pane is gone) and
``ScreenStackError`` (every screen is gone: the app is shutting down, and a compile or log update
posted just before still reaches its handler).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar, cast

from textual.app import ScreenStackError
from textual.css.query import NoMatches

__all__ = ["while_mounted"]

log = logging.getLogger(__name__)

_H = TypeVar("_H", bound=Callable[..., None])


def while_mounted(handler: _H) -> _H:
    """A handler that touches panes does nothing once they are gone (the app is closing, or the
    screen is being rebuilt): a late message then is normal, never a crash."""

    @functools.wraps(handler)
    def run(self: Any, *args: Any, **kw: Any) -> None:  # Any: whatever handler it wraps (app, controller, pane)
        try:
            handler(self, *args, **kw)
        except (NoMatches, ScreenStackError):
            log.debug("%s after its panes (or screens) were removed: ignored", handler.__name__)

    return cast(_H, run)
