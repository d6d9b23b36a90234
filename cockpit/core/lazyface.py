"""A package's lazy face (PEP 562): each public name is imported from its module on first use, so
importing one module inside the package (which runs its ``__init__`` first) never imports the rest.
Imports nothing of cockpit: any package may use it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["face_getattr"]


def face_getattr(package: str, table: Mapping[str, tuple[str, str]], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``'s ``__init__``: ``table`` maps a public name to (its module,
    relative to the package, the attribute there); a name loaded once is kept in ``namespace``
    (the package's globals), so the next lookup is a plain attribute."""

    def __getattr__(name: str) -> Any:  # Any: whatever the module holds under that name
        try:
            module, attr = table[name]
        except KeyError:  # not a public name (a submodule is imported as usual)
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), attr)
        namespace[name] = value
        return value

    return __getattr__
