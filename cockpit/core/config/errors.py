"""The one error a config can raise: it names the file, the dotted key, what is wrong and the fix."""

from __future__ import annotations

import os
from typing import Any

from ..layers import Layer

__all__ = ["ConfigError"]


class ConfigError(Exception):
    """A problem in a config file: names the file, the dotted key, what is wrong and the fix."""

    layer = Layer.CONFIG

    def __init__(self, path: str | os.PathLike[str] | None, key: str, problem: str, fix: str = "") -> None:
        self.path = str(path) if path else "<config>"
        self.key = key
        self.problem = problem
        self.fix = fix
        super().__init__(self.message)

    @property
    def message(self) -> str:
        where = f"{self.path}: {self.key}" if self.key else self.path
        return f"{where}: {self.problem}" + (f"\n  fix: {self.fix}" if self.fix else "")

    def to_dict(self) -> dict[str, Any]:
        return {"layer": "config", "file": self.path, "key": self.key, "problem": self.problem, "fix": self.fix}
