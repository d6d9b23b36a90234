"""Remote access: transports (SSH, local), the persistent framed session, runtime wrappers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import CommandResult, RemoteError, Transport
from .runtime import Runtime

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Config

__all__ = ["CommandResult", "RemoteError", "Transport", "Runtime", "make_transport"]


def make_transport(cfg: Config) -> Transport:
    """The transport a config describes (SSH by default, local for the demo)."""
    import os

    t = cfg.target
    runtime = Runtime(t.runtime, t.container, t.pct, t.docker, t.podman)
    if t.transport == "local":
        from .local import LocalTransport

        return LocalTransport(runtime)
    from .ssh import SSHParams, SSHTransport

    s = cfg.ssh
    ids = s.identity_file if isinstance(s.identity_file, list) or s.identity_file is None else [s.identity_file]
    params = SSHParams(
        host=t.host,
        port=t.port,
        user=t.user,
        known_hosts=str(cfg._local(s.known_hosts)) if s.known_hosts else None,
        identity_file=[str(cfg._local(i)) for i in ids] if ids else None,
        keepalive_interval=s.keepalive_interval,
        connect_timeout=s.connect_timeout,
        forward_agent=s.forward_agent,
        ssh_config=(str(cfg._local(s.config_file)) if s.config_file else "") if s.config_file is not None else (
            None if os.path.exists(os.path.expanduser("~/.ssh/config")) else ""),
    )
    return SSHTransport(params, runtime)
