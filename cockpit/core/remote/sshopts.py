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
    config is ignored (a forwarded agent lets anyone who is root on the host use your keys);
  - **known_hosts and key files are bounded**: asyncssh reads each file it is given to the end,
    so ``UserKnownHostsFile /dev/zero`` grew to 2.9 GB in 11 s and then hung, and a FIFO blocks
    for ever.  Every known_hosts file (at most :data:`KNOWN_HOSTS_MAX`) and every key file (at
    most :data:`KEY_MAX`, its ``.pub`` and ``-cert.pub`` too) must be a regular file, checked
    before asyncssh opens it: a ``config``-layer error for ``[ssh]`` keys, ``ssh`` for what the
    ssh config names, each naming the file and the fix.

* :func:`explain_connect_error`: every way of failing to connect, as a layered error a person can
  act on.  :class:`Backoff`: how soon to try again.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import stat
import time
from dataclasses import dataclass
from typing import Any, cast

from ..layers import Layer
from .base import RemoteError

__all__ = ["SSHParams", "ssh_params", "ssh_argv", "Backoff", "explain_connect_error", "connection_options", "keyscan_hint", "file_problem",
           "KNOWN_HOSTS_MAX", "KEY_MAX"]

#: the largest known_hosts file cockpit lets asyncssh read (a big fleet's is a few MiB)
KNOWN_HOSTS_MAX = 16 * 1024 * 1024
#: the largest private key, public key or certificate file (an RSA-16384 key is under 13 KiB)
KEY_MAX = 1024 * 1024


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


def ssh_params(cfg: Any) -> SSHParams:
    """The connection a config describes (``[target]`` and ``[ssh]``, local paths resolved)."""
    t, s = cfg.target, cfg.ssh
    ids = s.identity_file if isinstance(s.identity_file, list) or s.identity_file is None else [s.identity_file]
    return SSHParams(
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


def ssh_argv(p: SSHParams, *, tty: bool = True) -> list[str]:
    """The OpenSSH client's argv to ``p``'s host (the command to run there is appended by the
    caller), with cockpit's own connection's safety, whatever ``~/.ssh/config`` says (options on
    the command line win over it): ``StrictHostKeyChecking=yes`` (a host key not in known_hosts
    is refused, never accepted or asked about) and ``-a`` (no agent forwarding) unless
    ``[ssh] forward_agent = true`` (then ``-A``)."""
    argv = ["ssh"] + (["-t"] if tty else []) + ["-A" if p.forward_agent else "-a", "-o", "StrictHostKeyChecking=yes"]
    if p.port:
        argv += ["-p", str(int(p.port))]
    for key in p.identity_file or []:
        argv += ["-i", key]
    if p.known_hosts:
        argv += ["-o", f"UserKnownHostsFile={p.known_hosts}"]
    if p.ssh_config:
        argv += ["-F", p.ssh_config]
    argv.append(f"{p.user}@{p.host}" if p.user else p.host)
    return argv


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
    import asyncssh  # here, not at the top: ssh_params and ssh_argv serve commands that never connect

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


def file_problem(path: str, limit: int) -> str | None:
    """Why ``path`` may not be handed to asyncssh: not a regular file (a device, a FIFO, a
    directory: read without end, or blocked on), or larger than ``limit`` bytes.  None when it is
    fine or does not exist (asyncssh then says so, or skips it).  ``stat`` never opens the file, so
    a FIFO is judged without blocking."""
    try:
        st = os.stat(os.path.expanduser(path))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if not stat.S_ISREG(st.st_mode):
        kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a character device" if stat.S_ISCHR(st.st_mode) else "a block device" if stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        return f"is {kind}, not a regular file"
    if st.st_size > limit:
        return f"is {st.st_size} bytes, larger than the {limit // (1024 * 1024)} MiB cockpit reads"
    return None


def _bounded(path: str, limit: int, *, layer: Layer, what: str, fix: str) -> None:
    why = file_problem(path, limit)
    if why:
        raise RemoteError(layer, f"{what} {path} {why}", hint=f"{fix}; nothing was run")


def _check_keys(paths: list[str] | tuple[str, ...], layer: Layer, where: str) -> None:
    """Each key file and the ``.pub`` / ``-cert.pub`` asyncssh reads beside it."""
    for key in paths:
        for f in (str(key), f"{key}.pub", f"{key}-cert.pub"):
            _bounded(f, KEY_MAX, layer=layer, what="SSH key file", fix=f"point {where} at your private key file (e.g. ~/.ssh/id_ed25519)")


def _default_keys() -> list[str]:
    """The ``~/.ssh/id_*`` files asyncssh tries when no key is named (only those that exist)."""
    names = ("id_ed25519_sk", "id_ecdsa_sk", "id_ed448", "id_ed25519", "id_ecdsa", "id_rsa", "id_dsa")
    return [p for p in (os.path.join(os.path.expanduser("~/.ssh"), n) for n in names) if os.path.lexists(p)]


def connection_options(params: SSHParams) -> dict[str, Any]:
    """asyncssh keyword arguments for ``params`` (blocking: reads the ssh config, as asyncssh
    does).  Raises :class:`RemoteError` when host keys would not be checked or a known_hosts or
    key file is not a bounded regular file; see the module doc."""
    kw = _base_options(params)
    own_kh = "point [ssh] known_hosts at a regular known_hosts file (ssh-keyscan -p PORT HOST >> FILE)"
    if params.known_hosts:
        if _is_devnull(params.known_hosts):
            raise _unchecked(params, f"[ssh] known_hosts = {params.known_hosts}")
        _bounded(params.known_hosts, KNOWN_HOSTS_MAX, layer=Layer.CONFIG, what="[ssh] known_hosts:", fix=own_kh)
        if not os.path.exists(os.path.expanduser(params.known_hosts)):
            raise RemoteError(Layer.CONFIG, f"[ssh] known_hosts: {params.known_hosts} does not exist",
                              hint=f"{keyscan_hint(params)}; nothing was run")
    if params.identity_file:
        _check_keys(params.identity_file, Layer.CONFIG, "[ssh] identity_file")
    import asyncssh

    # the ssh config as asyncssh reads it, without loading a key (client_keys=None): its files are judged first
    probe = asyncssh.SSHClientConnectionOptions(host=params.host, **{**kw, "client_keys": None})
    if not params.identity_file:
        conf = cast(Any, probe.config)  # asyncssh's SSHClientConfig: get() answers what the file said
        named = [str(k) for k in conf.get("IdentityFile", ()) or ()] + [str(c) for c in conf.get("CertificateFile", ()) or ()]
        _check_keys(named or _default_keys(), Layer.SSH, f"IdentityFile in {params.config_name}" if named else "~/.ssh/id_*")
    if params.known_hosts:
        return kw
    files = probe.known_hosts
    if files is None:
        raise _unchecked(params, f"{params.config_name} sets UserKnownHostsFile none")
    if isinstance(files, (list, tuple)) and files and all(_is_devnull(f) for f in files):
        raise _unchecked(params, f"{params.config_name} sets UserKnownHostsFile {' '.join(map(str, files))}")
    listed = [str(f) for f in files] if isinstance(files, (list, tuple)) else [str(files)] if isinstance(files, str) else []
    for f in listed or ["~/.ssh/known_hosts"]:  # none listed: asyncssh reads ~/.ssh/known_hosts
        _bounded(f, KNOWN_HOSTS_MAX, layer=Layer.SSH, what=f"known_hosts file (UserKnownHostsFile in {params.config_name})"
                 if listed else "known_hosts file", fix="name a regular known_hosts file in UserKnownHostsFile, or set [ssh] known_hosts")
    # what the config said (an empty list: ~/.ssh/known_hosts), passed on as a value, never as ()
    kw["known_hosts"] = list(files) if isinstance(files, (list, tuple)) else files
    return kw
