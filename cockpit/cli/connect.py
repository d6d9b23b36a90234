"""``cockpit adopt PID`` and ``cockpit connect [USER@]HOST[:CONTAINER]``: take over a job cockpit did not start.

``adopt`` makes a running process of the target (its pid as the target sees it) the target's job
(:meth:`cockpit.core.engine.Engine.adopt`): an attempt noted ``adopted``, verified as a launched
job is, followed to its end; ``stop``, ``status`` and the TUI then treat it as cockpit's own.
Exit codes as ``cockpit verify``: 0 passed, 1 failed (the verdict names the layer), 75 busy.

``connect`` is ``init`` and ``adopt`` and the TUI in one: the same discovery and choice as
``cockpit init`` (:mod:`cockpit.cli.discover`), the config written (default ``./cockpit.toml``; an
existing file is used as it is when it names the same host and container, else refused: pass
``-o``), the chosen job adopted (judged as it is now, as ``cockpit verify`` does: the TUI opens at
once and follows it from there), then the TUI opened on that config.  :func:`prepare` is all of it
but the TUI (headless, for tests and scripts).

Registered in ``cockpit/cli/main.py`` with ``add_parser(sub)``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.config import Config, ConfigError, load_config
from ..core.layers import Verdict
from ..core.remote.base import RemoteError
from ..core.render import render_verdict
from .args import Resolved, add_globals, port_number, positive_seconds, shown_path
from .common import EXIT_BUSY, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, Busy, emit, engine_session, run_loop, safe_text, with_engine
from .discover import NothingChosen, _candidates, choose_here

if TYPE_CHECKING:  # pragma: no cover
    from ..core.discover import DiscoverySpec

__all__ = ["add_parser", "cmd_adopt", "cmd_connect", "prepare", "Prepared"]

ADOPT_HELP = "make a running job cockpit did not start (its pid in the target) the target's job: journalled, verified, followed"
CONNECT_HELP = "find the job on a host, write the config, adopt the job and open the TUI on it (init + adopt + cockpit)"
_SKIP = ("config", "demo", "target", "read_only", "share", "json")


def add_parser(sub: Any) -> None:
    """Add ``adopt`` and ``connect`` to the sub-command parsers (``sub`` from ``add_subparsers``)."""
    s: argparse.ArgumentParser = sub.add_parser("adopt", help=ADOPT_HELP, description=ADOPT_HELP)
    s.add_argument("pid", type=int, metavar="PID", help="the job's pid as the target sees it (inside the container)")
    s.add_argument("--wait", action="store_true", help="wait for a running action to finish instead of refusing")
    add_globals(s)
    s.set_defaults(func=cmd_adopt, acts=True)

    c: argparse.ArgumentParser = sub.add_parser("connect", help=CONNECT_HELP, description=CONNECT_HELP)
    c.add_argument("where", metavar="[USER@]HOST[:CONTAINER]", help="the SSH host; CONTAINER: look only at that container")
    c.add_argument("-o", "--output", default="cockpit.toml", metavar="FILE",
                   help="the config (default ./cockpit.toml; an existing one is used when it names the same host and container)")
    c.add_argument("--port", type=port_number, default=None, metavar="N", help="SSH port (default: ~/.ssh/config, else 22)")
    c.add_argument("--identity", default=None, metavar="FILE", help="SSH private key (written to [ssh] identity_file)")
    c.add_argument("--known-hosts", default=None, metavar="FILE", help="known_hosts with the host's key (written to [ssh] known_hosts)")
    c.add_argument("--yes", "-y", action="store_true", help="take the best candidate without asking")
    c.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="S", help="seconds the discovery may take on the host (default 60)")
    add_globals(c, skip=_SKIP)
    c.set_defaults(func=cmd_connect, no_config=True)


def _say(text: str) -> None:
    print(f"cockpit connect: {safe_text(text)}", file=sys.stderr, flush=True)


def cmd_adopt(args: argparse.Namespace, cfg: Config) -> int:
    try:
        v: Verdict = with_engine(args, cfg, lambda eng: eng.adopt(args.pid, wait=args.wait, follow=False))
    except Busy:
        return EXIT_BUSY
    emit(args, {**v.to_dict(), "summary": v.summary()}, render_verdict)
    return EXIT_OK if v.ok else EXIT_FAILED


@dataclass
class Prepared:
    """What :func:`prepare` did: the config (and where), the job adopted (its pid) and its verdict."""

    cfg: Config
    path: Path
    written: bool
    pid: int | None = None
    verdict: Verdict | None = None


class ConnectError(Exception):
    """Why connect stops before the TUI: ``code`` is the exit code (said on stderr already)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _same_target(cfg: Config, spec: DiscoverySpec, container: str | None) -> bool:
    t = cfg.target
    return (t.host == spec.host and (spec.user is None or t.user == spec.user)
            and str(t.container or "") == str(container or ""))


def _config(args: argparse.Namespace, spec: DiscoverySpec) -> tuple[Config, Path, bool, int | None]:
    """Discover, choose, write (or reuse) the config; returns it, its path, whether it was written, the job's pid."""
    import asyncio

    from ..core.discover import config_text, discover, write_config

    try:
        report = asyncio.run(discover(spec, timeout=args.timeout))
    except RemoteError as e:
        _say(f"{e.layer.value}: {e}")
        raise ConnectError(EXIT_FAILED) from None
    cands = _candidates(report, spec)
    if isinstance(cands, str):
        _say(cands)
        raise ConnectError(EXIT_FAILED)
    try:
        picked = choose_here(cands, yes=args.yes, host=spec.host)
    except NothingChosen:
        _say("nothing chosen")
        raise ConnectError(EXIT_FAILED) from None
    if picked is None:
        _say("several candidates and no terminal to ask on: pass --yes to take the best, or name the container (HOST:CONTAINER)")
        raise ConnectError(EXIT_USAGE)
    pid = picked.job.pid if picked.job is not None else None
    path = Path(args.output).expanduser()
    if path.exists():
        try:
            cfg = load_config(path)
        except ConfigError as e:
            _say(f"config: {path} exists and does not load ({e.message}): pass -o FILE to write a new one")
            raise ConnectError(EXIT_USAGE) from None
        if not _same_target(cfg, spec, picked.target.container):
            _say(f"config: {path} exists for another target ({cfg.target.user}@{cfg.target.host}:{cfg.target.container or '-'}): "
                 f"pass -o FILE to write the config for {picked.describe()} elsewhere")
            raise ConnectError(EXIT_USAGE)
        return cfg, path, False, pid
    line = "cockpit connect " + shlex.join([args.where] + (["--port", str(args.port)] if args.port else []))
    try:
        write_config(path, config_text(spec, picked.target, picked.job, command_line=line))
    except ConfigError as e:
        _say(f"config: the written config would not load: {e.message} ({e.key}); nothing was written")
        raise ConnectError(EXIT_USAGE) from None
    return load_config(path), path, True, pid


def prepare(args: argparse.Namespace) -> Prepared:
    """Everything ``connect`` does before the TUI (see the module doc); :class:`ConnectError` with the exit code."""
    from ..core.discover import DiscoverySpec

    try:
        spec = DiscoverySpec.parse(args.where, port=args.port, identity_file=args.identity, known_hosts=args.known_hosts)
    except ValueError as e:
        _say(str(e))
        raise ConnectError(EXIT_USAGE) from None
    cfg, path, written, pid = _config(args, spec)
    _say(f"{'wrote' if written else 'using'} {path}")
    if pid is None:
        _say("process: no running training job to adopt: the TUI opens on the target")
        return Prepared(cfg, path, written)
    from ..core.target_lock import Busy as TargetBusy  # here: the runtimes it imports cost every command's start-up

    quiet = argparse.Namespace(json=True)
    try:
        v: Verdict = run_loop(engine_session(quiet, cfg, lambda eng: eng.adopt(pid, follow=False, now=True)))
    except TargetBusy as e:  # another cockpit acts on the target: said, and the TUI shows it anyway
        _say(f"not adopted: {e}")
        return Prepared(cfg, path, written, pid)
    _say(f"adopted pid {pid}: {v.summary()}")
    return Prepared(cfg, path, written, pid, v)


def cmd_connect(args: argparse.Namespace, cfg: Any = None) -> int:
    try:
        done = prepare(args)
    except ConnectError as e:
        return e.code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    from .tui import run_tui

    return run_tui(Resolved(done.cfg, shown_path(done.path)))
