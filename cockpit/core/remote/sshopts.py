"""What an SSH connection is made with, what cockpit refuses to make it with, and why one failed.

* :class:`SSHParams`: the ``[target]`` and ``[ssh]`` values a connection needs.
* :func:`connection_options`: asyncssh's keyword arguments, with the two safety decisions made by
  cockpit and never by ``~/.ssh/config``:

  - **host keys are always checked.**  asyncssh honours ``UserKnownHostsFile none`` in an ssh
    config by checking nothing at all; cockpit reads the config first (the same way asyncssh
    will) and refuses to connect when no known_hosts file would be consulted (``none``) or only
    ``/dev/null`` would, with an ``ssh``-layer error that says how to add the key.  The resolved
    files are then passed explicitly, so nothing later in asyncssh can drop the check.
    ``StrictHostKeyChecking`` is not read at all (asyncssh has no trust-on-first-use): an unknown
    key is refused, never accepted, whatever it says;
  - **agent forwarding only with** ``[ssh] forward_agent = true``; ``ForwardAgent yes`` in the ssh
    config is ignored (a forwarded agent lets anyone who is root on the host use your keys).

* :func:`explain_connect_error`: every way of failing to connect, as a layered error a person can
  act on.  :class:`Backoff`: how soon to try again.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from dataclasses import dataclass
from typing import Any

import asyncssh

from ..layers import Layer
from .base import RemoteError

__all__ = ["SSHParams", "Backoff", "explain_connect_error", "connection_options", "keyscan_hint"]


@dataclass
class SSHParams:
    host: str
    port: int | None = None
    user: str | None = None
    known_hosts: str | None = None  # None: what the ssh config says, else ~/.ssh/known_hosts
    identity_file: list[str] | None = None
    keepalive_interval: float = 15.0
    connect_timeout: float = 10.0
    ssh_config: str | None = None  # None: ~/.ssh/config when it exists; "": none
    forward_agent: bool = False

    @property
    def where(self) -> str:
        u = f"{self.user}@" if self.user else ""
        p = f":{self.port}" if self.port else ""
        return f"{u}{self.host}{p}"

    @property
    def config_name(self) -> str:
        return self.ssh_config or "~/.ssh/config"


class Backoff:
    """Capped exponential backoff: 0.5 s, 1 s, 2 s … up to ``cap``; reset on success."""

    def __init__(self, base: float = 0.5, cap: float = 30.0) -> None:
        self.base, self.cap = base, cap
        self.failures = 0
        self.retry_at = 0.0

    def failed(self) -> float:
        delay = min(self.cap, self.base * (2.0 ** self.failures))
        self.failures += 1
        self.retry_at = time.monotonic() + delay
        return delay

    def succeeded(self) -> None:
        self.failures = 0
        self.retry_at = 0.0

    @property
    def wait_s(self) -> float:
        return max(0.0, self.retry_at - time.monotonic())


def keyscan_hint(params: SSHParams, known_hosts: str | None = None) -> str:
    """How to trust the host's key by hand, with the host and port filled in."""
    kh = known_hosts or params.known_hosts or "~/.ssh/known_hosts"
    port = f"-p {int(params.port)} " if params.port else ""
    return (f"add the host's key once: ssh-keyscan {port}{shlex.quote(params.host)} >> {kh} "
            "(compare its fingerprint with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the host), "
            "or set [ssh] known_hosts to a file that has it")


def explain_connect_error(exc: BaseException, params: SSHParams) -> RemoteError:
    """Turn whatever asyncssh/OS raised while connecting into an actionable ``ssh`` error."""
    where = params.where
    kh = params.known_hosts or "~/.ssh/known_hosts"
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return RemoteError(
            Layer.SSH, f"host key of {where} is not trusted: {exc.reason}",
            hint=f"a new host: {keyscan_hint(params)}; a reinstalled one: verify its new key, then ssh-keygen -R and add it again "
                 f"({kh}); cockpit never accepts an unknown key, whatever StrictHostKeyChecking says; nothing was run",
        )
    if isinstance(exc, asyncssh.PermissionDenied):
        return RemoteError(Layer.SSH, f"authentication to {where} failed: {exc.reason}", hint="check [ssh] identity_file and [target] user; is the key in authorized_keys?")
    if isinstance(exc, ConnectionRefusedError):
        return RemoteError(Layer.SSH, f"connection to {where} refused", hint="is sshd running on the host, and is [target] port right?")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return RemoteError(Layer.SSH, f"connecting to {where} timed out after {params.connect_timeout:g}s", hint="is the host up and reachable (VPN, firewall)? [ssh] connect_timeout sets the limit")
    if isinstance(exc, asyncssh.ConnectionLost):
        return RemoteError(Layer.SSH, f"connection to {where} lost: {exc.reason}", hint="cockpit reconnects with backoff")
    if isinstance(exc, asyncssh.DisconnectError):
        return RemoteError(Layer.SSH, f"{where} disconnected: {exc.reason}", hint="see the host's sshd log")
    if isinstance(exc, asyncssh.KeyImportError) or isinstance(exc, FileNotFoundError) and params.identity_file and exc.filename in params.identity_file:
        return RemoteError(Layer.CONFIG, f"cannot load the SSH key: {exc}", hint="check [ssh] identity_file")
    if isinstance(exc, OSError):
        return RemoteError(Layer.SSH, f"cannot reach {where}: {exc.strerror or exc}", hint="check [target] host (DNS, routing)")
    return RemoteError(Layer.SSH, f"cannot connect to {where}: {type(exc).__name__}: {exc}")


def _base_options(p: SSHParams) -> dict[str, Any]:
    kw: dict[str, Any] = {
        "keepalive_interval": p.keepalive_interval,
        "keepalive_count_max": 3,
        "connect_timeout": p.connect_timeout,
        "login_timeout": p.connect_timeout,
        # explicit, so ForwardAgent in the ssh config never turns it on
        "agent_forwarding": bool(p.forward_agent),
        # (): asyncssh reads UserKnownHostsFile from the ssh config; resolved below, never left to it
        "known_hosts": p.known_hosts if p.known_hosts else (),
    }
    if p.port:
        kw["port"] = p.port
    if p.user:
        kw["username"] = p.user
    if p.identity_file:
        kw["client_keys"] = p.identity_file
    if p.ssh_config is not None:
        kw["config"] = [p.ssh_config] if p.ssh_config else None
    return kw


def _is_devnull(path: object) -> bool:
    return isinstance(path, str) and os.path.realpath(os.path.expanduser(path)) == os.devnull


def _unchecked(params: SSHParams, why: str) -> RemoteError:
    return RemoteError(
        Layer.SSH, f"refusing to connect to {params.where}: its host key would not be checked ({why})",
        hint=f"cockpit always verifies host keys, whatever the ssh config says: {keyscan_hint(params)}; nothing was run")


def connection_options(params: SSHParams) -> dict[str, Any]:
    """asyncssh keyword arguments for ``params`` (blocking: reads the ssh config and the keys, as
    asyncssh does).  Raises :class:`RemoteError` (layer ``ssh``) when host keys would not be
    checked; see the module doc."""
    kw = _base_options(params)
    if params.known_hosts:
        if _is_devnull(params.known_hosts):
            raise _unchecked(params, f"[ssh] known_hosts = {params.known_hosts}")
        return kw
    probe = asyncssh.SSHClientConnectionOptions(host=params.host, **kw)
    files = probe.known_hosts
    if files is None:
        raise _unchecked(params, f"{params.config_name} sets UserKnownHostsFile none")
    if isinstance(files, (list, tuple)) and files and all(_is_devnull(f) for f in files):
        raise _unchecked(params, f"{params.config_name} sets UserKnownHostsFile {' '.join(map(str, files))}")
    # what the config said (an empty list: ~/.ssh/known_hosts), passed on as a value, never as ()
    kw["known_hosts"] = list(files) if isinstance(files, (list, tuple)) else files
    return kw
