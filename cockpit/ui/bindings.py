"""Textual bindings made from the key registry (:mod:`cockpit.core.keymap`, plain data)."""

from __future__ import annotations

from collections.abc import Iterable

from textual.binding import Binding

from ..core.keymap import ACTIONS, UIAction

__all__ = ["binding", "bindings"]


def binding(a: UIAction) -> Binding:
    """One registry entry as a Textual binding (its id is the ``[keymap]`` id)."""
    return Binding(a.key, a.action, a.description, show=a.footer, key_display=a.key_display, tooltip=a.help, id=a.id)


def bindings(actions: Iterable[UIAction] = ACTIONS) -> list[Binding]:
    """Every action's binding (demo-only ones too: the app's ``check_action`` disables them)."""
    return [binding(a) for a in actions]
