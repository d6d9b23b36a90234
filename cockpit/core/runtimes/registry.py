"""The runtimes by name: :func:`register` one, :func:`runtime_for` picks one from a config.

A runtime is one module that calls :func:`register` with its name and a factory (the config →
the runtime object); the built-in ones register in :mod:`cockpit.core.runtimes`.  Registering
also tells the config loader what the runtime's ``[target]`` takes (its
:class:`~cockpit.core.config.sections.RuntimeShape`) and the start-failure texts its name
stands for, so ``[target] runtime = "NAME"`` loads and reads right.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config.sections import RUNTIME_SHAPES, RuntimeShape
from ..remote.startfail import START_WORDS, StartWords
from .base import Runtime

__all__ = ["register", "runtime_for", "registered", "UnknownRuntime"]

Factory = Callable[[Any], Runtime]

_FACTORIES: dict[str, Factory] = {}


class UnknownRuntime(ValueError):
    """``[target] runtime`` names no registered runtime."""


def register(name: str, factory: Factory, *, shape: RuntimeShape | None = None, words: StartWords | None = None) -> None:
    """Make ``[target] runtime = name`` choose ``factory(cfg)``.  ``shape``: what its
    ``[target]`` takes (kept when the config already knows the name; default: no container);
    ``words``: its start-failure texts (default: a host's)."""
    if not name or not isinstance(name, str):
        raise ValueError(f"a runtime needs a name, not {name!r}")
    _FACTORIES[name] = factory
    if shape is not None or name not in RUNTIME_SHAPES:
        RUNTIME_SHAPES[name] = shape or RuntimeShape()
    if words is not None:
        START_WORDS[name] = words


def registered() -> tuple[str, ...]:
    """The names :func:`runtime_for` knows."""
    return tuple(_FACTORIES)


def runtime_for(cfg: Any) -> Runtime:
    """The runtime ``[target] runtime`` names, made once for this config."""
    name = cfg.target.runtime
    factory = _FACTORIES.get(name)
    if factory is None:
        known = ", ".join(repr(n) for n in _FACTORIES)
        raise UnknownRuntime(f"[target] runtime = {name!r} is not a runtime cockpit knows (known: {known})")
    return factory(cfg)
