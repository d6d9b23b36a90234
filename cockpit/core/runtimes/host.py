"""``runtime = "none"``: the SSH host itself (or this machine, with the local transport).

Everything is :class:`~.common.BaseRuntime`'s: commands run by ``/bin/sh`` on the host, there is
no container to inspect or restart (cockpit never reboots a host), and the lock covers the job's
workdir.
"""

from __future__ import annotations

from typing import Any

from .common import BaseRuntime

__all__ = ["HostRuntime"]


class HostRuntime(BaseRuntime):
    """The host: no container; the interactive shell is a login shell in the workdir."""

    kind = "none"

    @classmethod
    def from_config(cls, cfg: Any) -> HostRuntime:
        return cls()
