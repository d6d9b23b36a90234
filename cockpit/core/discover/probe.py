"""Run discovery on a host: ONE ``run_host`` of the script (:mod:`.script`), parsed (:mod:`.parse`).

The connection is cockpit's own SSH transport (:class:`~cockpit.core.remote.ssh.SSHTransport`):
host keys are always checked, an unknown one is refused with the fingerprint and the
``ssh-keyscan`` line (:func:`untrusted_key_message`), never accepted.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import shlex
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..layers import Layer
from ..remote.base import RemoteError, Transport
from .model import HostReport
from .parse import parse_report
from .script import build_script

if TYPE_CHECKING:  # pragma: no cover
    from ..remote.sshopts import SSHParams

# asyncssh, the SSH transport and the runtimes are imported where a host is reached, not here:
# ``cockpit --help`` and every command that connects to nothing import this module (through
# ``cockpit init``'s parser) and would pay for them (tests/test_cli_startup.py)

__all__ = ["DiscoverySpec", "discover", "run_discovery", "host_fingerprint", "untrusted_key_message"]


@dataclass
class DiscoverySpec:
    """What ``cockpit init`` was given: ``[USER@]HOST[:CONTAINER]`` and the SSH options."""

    host: str
    user: str | None = None
    container: str | None = None
    port: int | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    ssh_config: str | None = None
    connect_timeout: float = 10.0

    @classmethod
    def parse(cls, spec: str, **kw: object) -> DiscoverySpec:
        """``[USER@]HOST[:CONTAINER]`` (an IPv6 address in brackets: ``[::1]:200``)."""
        user, at, rest = spec.rpartition("@")
        if rest.startswith("["):
            host, _, tail = rest[1:].partition("]")
            container = tail[1:] if tail.startswith(":") else None
        else:
            host, colon, container_s = rest.partition(":")
            container = container_s if colon else None
        if not host:
            raise ValueError(f"no host in {spec!r}: expected [USER@]HOST[:CONTAINER]")
        return cls(host=host, user=user if at else None, container=container or None, **kw)  # type: ignore[arg-type]

    def params(self) -> SSHParams:
        from ..remote.sshopts import SSHParams

        return SSHParams(host=self.host, port=self.port, user=self.user, known_hosts=self.known_hosts,
                         identity_file=[self.identity_file] if self.identity_file else None,
                         connect_timeout=self.connect_timeout, ssh_config=self.ssh_config)


async def run_discovery(transport: Transport, spec: DiscoverySpec, *, timeout: float = 60.0) -> HostReport:
    """The script on ``transport``'s host, parsed.  Raises :class:`RemoteError` when the host cannot
    be reached (layer ``ssh``) or the script did not finish (layer ``host``)."""
    t0 = time.monotonic()
    res = await transport.run_host(f"sh -c {shlex.quote(build_script(spec.container))}", timeout=timeout)
    if res.timed_out:
        raise RemoteError(Layer.HOST, f"discovery on {spec.host} did not finish within {timeout:g}s",
                          hint="a hung pct/docker/ps on the host? run `pct list` there by hand", output=res.err_text)
    if not res.stdout.strip():
        raise RemoteError(Layer.HOST, f"discovery on {spec.host} printed nothing (exit {res.exit_code})",
                          hint="is /bin/sh there?", output=res.err_text)
    report = parse_report(res.text, spec.host, user=spec.user, port=spec.port)
    report.duration_ms = (time.monotonic() - t0) * 1000
    return report


async def discover(spec: DiscoverySpec, *, timeout: float = 60.0) -> HostReport:
    """Connect with ``spec`` (host keys checked), run discovery, close."""
    if spec.known_hosts and not os.path.exists(os.path.expanduser(spec.known_hosts)):
        raise RemoteError(Layer.SSH, untrusted_key_message(spec, await host_fingerprint(spec)),
                          hint=f"{spec.known_hosts} does not exist; cockpit never trusts a host key by itself; nothing was run")
    from ..remote.ssh import SSHTransport
    from ..runtimes.host import HostRuntime

    transport = SSHTransport(spec.params(), HostRuntime())
    try:
        return await run_discovery(transport, spec, timeout=timeout)
    except RemoteError as e:
        if e.layer == Layer.SSH and "not trusted" in e.message:
            raise RemoteError(Layer.SSH, untrusted_key_message(spec, await host_fingerprint(spec)),
                              hint="cockpit never trusts a host key by itself; nothing was run") from None
        raise
    finally:
        await transport.close()


async def host_fingerprint(spec: DiscoverySpec) -> str | None:
    """The SHA256 fingerprint of the host key the server offers (read without trusting it,
    only to show it), or None when it cannot be had."""
    import asyncssh

    try:
        key = await asyncio.wait_for(asyncssh.get_server_host_key(spec.host, spec.port or 22), spec.connect_timeout)
    except (OSError, asyncssh.Error, asyncio.TimeoutError, TimeoutError):
        return None
    if key is None:
        return None
    blob = key.public_data
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"{key.get_algorithm()} SHA256:{digest}"


def untrusted_key_message(spec: DiscoverySpec, fingerprint: str | None) -> str:
    port = f"-p {spec.port} " if spec.port else ""
    kh = spec.known_hosts or "~/.ssh/known_hosts"
    fp = f"it offers {fingerprint}" if fingerprint else "its key could not be read"
    return (f"host key of {spec.host}{':' + str(spec.port) if spec.port else ''} is not trusted yet ({fp}). "
            f"Compare it with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on the host, then: "
            f"ssh-keyscan {port}{shlex.quote(spec.host)} >> {kh}")
