"""The one thin adapter between the engine's typed events and Textual messages.

The app subscribes it to the engine (:meth:`cockpit.core.engine.Engine.subscribe`); it runs inside
the engine's coroutines, so it only *posts*: the app's handlers are the only code that touches
widgets.  Every attempt, whether the attempt key, attempt-on-save or another front end started it
in this engine, reaches the screen the same way: the same ``ActionFinished`` with its result, the
same bell and notification.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.message import Message

from ..core import events as ev
from .messages import ActionFinished, ActionStarted, CompileChanged, FateChanged, StageEvent

__all__ = ["EventAdapter"]


class EventAdapter:
    """``adapter(event)`` posts the matching message with ``post``."""

    def __init__(self, post: Callable[[Message], object]) -> None:
        self.post = post

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.StageProgress):
            self.post(StageEvent(event.action, event.stage))
        elif isinstance(event, ev.ActionStarted):
            self.post(ActionStarted(event.action, event.note))
        elif isinstance(event, ev.ActionFinished):
            res = event.result
            self.post(ActionFinished(event.action, event.verdict,
                                     outcome=res.outcome.value if res is not None else None,
                                     attempt=res.attempt if res is not None else None,
                                     first_error=res.first_error if res is not None else None,
                                     duration_s=event.duration_s, result=res))
        elif isinstance(event, ev.FateChanged):
            self.post(FateChanged(event))
        elif isinstance(event, ev.CompileUpdated):
            self.post(CompileChanged(event))
