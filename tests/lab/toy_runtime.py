"""A toy runtime, whole in this one module: the proof that a runtime is one module.

``[target] runtime = "toy"`` is the SSH host itself, but every command reaches it through
``env COCKPIT_TOY=1 /bin/sh``: the persistent shell, each wrapped command, and so the job
launched from them all see ``COCKPIT_TOY=1``.  Importing the module registers it.
"""

from __future__ import annotations

import shlex
from typing import Any

from cockpit.core.runtimes import register
from cockpit.core.runtimes.common import BaseRuntime

__all__ = ["ToyRuntime", "TOY_ENV"]

#: what every command the toy runtime wraps has in its environment
TOY_ENV = "COCKPIT_TOY=1"


class ToyRuntime(BaseRuntime):
    """The host, entered through ``env COCKPIT_TOY=1 /bin/sh``."""

    kind = "toy"

    def describe(self) -> str:
        return "toy host"

    def shell(self) -> str:
        return f"env {TOY_ENV} /bin/sh"

    def wrap(self, command: str) -> str:
        return f"env {TOY_ENV} /bin/sh -c {shlex.quote(command)}"


def _make(cfg: Any) -> ToyRuntime:
    return ToyRuntime()


register("toy", _make)
