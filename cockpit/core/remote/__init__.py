"""Remote access: transports (SSH, local), the persistent framed session, the ssh options.

Where a command runs *inside* the target is the runtime's business (:mod:`cockpit.core.runtimes`):
a transport is made with the runtime the engine chose and wraps every command with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import CommandResult, RemoteError, Transport

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Config
    from ..runtimes.base import Runtime

__all__ = ["CommandResult", "RemoteError", "Transport", "make_transport"]


def make_transport(cfg: Config, runtime: Runtime) -> Transport:
    """The transport a config describes (SSH by default, local for the demo), reaching into the
    target through ``runtime`` (:func:`cockpit.core.runtimes.runtime_for`)."""
    if cfg.target.transport == "local":
        from .local import LocalTransport

        return LocalTransport(runtime)
    from .ssh import SSHTransport
    from .sshopts import ssh_params

    return SSHTransport(ssh_params(cfg), runtime)
