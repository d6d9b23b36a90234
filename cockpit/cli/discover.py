"""``cockpit init [USER@]HOST[:CONTAINER]``: find what runs on a host and write the config for it.

One SSH round trip (:mod:`cockpit.core.discover`) reads the runtimes on the host (``pct``,
``docker``, ``podman``, Slurm), each container's GPU lines and, in every running target, the
training processes: their command line, cwd, user, start time, the environment that matters and
where their output goes.  With several candidates on a terminal it opens a picker (:mod:`cockpit.ui.screens.picker`; a numbered list when stdout is not a terminal);
``--yes`` takes the best (a running target with a torch job writing to a file); ``--json``
prints the report and writes nothing.  The config is checked by the real loader first and never
written over an existing file without ``--force``.  An unknown host key is refused with its
fingerprint and the ``ssh-keyscan`` line to trust it: init never trusts a key by itself.

Registered in ``cockpit/cli/main.py`` with ``add_parser(sub)``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import TYPE_CHECKING, Any

from ..core.config import ConfigError
from ..core.remote.base import RemoteError
from .args import add_globals, port_number, positive_seconds
from .common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, safe_text

if TYPE_CHECKING:  # pragma: no cover
    from ..core.discover import Candidate, DiscoverySpec, HostReport

# cockpit.core.discover is imported by the functions that run init: every command builds this
# module's parser, and only init needs discovery (tests/test_cli_startup.py)

__all__ = ["add_parser", "cmd_init", "choose", "choose_here", "NothingChosen"]

HELP = "find the training job on a host and write a config for it (one SSH round trip; reads only)"
DESCRIPTION = (
    "Find what runs on HOST in one SSH round trip (pct, docker, podman, Slurm; in each running container and on the host "
    "itself the Python processes with PyTorch loaded or a training command line) and write a config for it, each value "
    "with a comment saying where it came from. Several candidates: on a terminal they are listed and you pick one; "
    "--yes takes the best. An existing FILE is kept unless --force. An unknown host key is refused with its "
    "fingerprint and the ssh-keyscan line to trust it. Reads only: nothing is started or changed on the host.")
#: the global options that mean nothing before a config exists
_SKIP = ("config", "demo", "target", "read_only", "share")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``init`` to the sub-command parsers (``sub`` from ``add_subparsers``)."""
    s: argparse.ArgumentParser = sub.add_parser("init", help=HELP, description=DESCRIPTION)
    s.add_argument("where", metavar="[USER@]HOST[:CONTAINER]", help="the SSH host; CONTAINER: look only at that container (CTID or name)")
    s.add_argument("-o", "--output", default="cockpit.toml", metavar="FILE", help="the config to write (default ./cockpit.toml)")
    s.add_argument("--port", type=port_number, default=None, metavar="N", help="SSH port (default: ~/.ssh/config, else 22)")
    s.add_argument("--identity", default=None, metavar="FILE", help="SSH private key (written to [ssh] identity_file)")
    s.add_argument("--known-hosts", default=None, metavar="FILE", help="known_hosts with the host's key (written to [ssh] known_hosts)")
    s.add_argument("--yes", "-y", action="store_true", help="take the best candidate without asking")
    s.add_argument("--force", action="store_true", help="replace FILE if it exists")
    s.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="S", help="seconds the discovery may take on the host (default 60)")
    add_globals(s, skip=_SKIP, json="print the discovery report as JSON and write nothing")
    s.set_defaults(func=cmd_init, no_config=True)
    return s


def _say(text: str) -> None:
    print(f"cockpit init: {safe_text(text)}", file=sys.stderr, flush=True)


def _problems(report: HostReport, spec: DiscoverySpec) -> None:
    for p in report.problems:
        if "squeue" in p and "sbatch" not in report.tools:
            continue
        _say(p)
    for t in report.targets:
        for p in t.problems:
            _say(f"{'host' if t.runtime == 'none' else 'container'}: {t.label}: {p}")
    if report.malformed:
        _say(f"host: {len(report.malformed)} line(s) of the discovery output could not be read, e.g. {report.malformed[0][:120]!r}")


def _listing(cands: list[Candidate]) -> str:
    return "\n".join(f"  {i}. {c.describe()}" for i, c in enumerate(cands, 1))


def choose(cands: list[Candidate], *, yes: bool, interactive: bool, ask: Any = input) -> Candidate | None:
    """The candidate to write: the only one, the best with ``yes``, else the one the person picks
    (None: nobody to ask, or no answer)."""
    if len(cands) == 1 or yes:
        return cands[0]
    if not interactive:
        return None
    print(safe_text("candidates, best first:\n" + _listing(cands)), file=sys.stderr)
    while True:
        try:
            answer = str(ask(f"which one? [1-{len(cands)}, Enter = 1] ")).strip()
        except EOFError:
            return None
        if not answer:
            return cands[0]
        if answer.isdigit() and 1 <= int(answer) <= len(cands):
            return cands[int(answer) - 1]
        print(f"a number from 1 to {len(cands)}, please", file=sys.stderr)


class NothingChosen(Exception):
    """The person left the picker without choosing."""


def choose_here(cands: list[Candidate], *, yes: bool, host: str = "") -> Candidate | None:
    """:func:`choose` on this process's terminal: the picker when stdin and stdout are a terminal
    (raises :class:`NothingChosen` when left without a choice), else the numbered prompt."""
    if len(cands) > 1 and not yes and sys.stdin.isatty() and sys.stdout.isatty():
        from ..ui.screens.picker import pick  # Textual: loaded only when there is a choice to make

        picked = pick(cands, host=host)
        if picked is None:
            raise NothingChosen
        return picked
    return choose(cands, yes=yes, interactive=sys.stdin.isatty())


def _candidates(report: HostReport, spec: DiscoverySpec) -> list[Candidate] | str:
    """The ranked candidates, or why there is none (a message naming its layer)."""
    from ..core.discover import rank

    cands = rank(report)
    if spec.container:
        cands = [c for c in cands if c.target.container == spec.container or c.target.name == spec.container]
        if not cands:
            known = ", ".join(t.label for t in report.targets if t.runtime != "none") or "none"
            return f"container: no container {spec.container!r} on {spec.host} (containers found: {known})"
    elif not any(t.runtime != "none" for t in report.targets):
        _say(f"host: no containers on {spec.host} (pct/docker/podman: {', '.join(x for x in report.tools if x in ('pct', 'docker', 'podman')) or 'not installed'}); "
             "looking at the host itself")
    running = [c for c in cands if c.target.running]
    if not running:
        return f"container: nothing running to look at on {spec.host}: " + "; ".join(c.describe() for c in cands)
    with_job = [c for c in running if c.job is not None]
    if not with_job:
        where = ", ".join(c.target.label for c in running)
        _say(f"process: no Python training job (libtorch mapped, or train/torchrun/accelerate/deepspeed in its argv) in {where}; "
             "the config gets no [job] command: write it before the first attempt")
        return running
    return with_job


def cmd_init(args: argparse.Namespace, cfg: Any = None) -> int:
    import asyncio

    from ..core.discover import DiscoverySpec, discover

    try:
        spec = DiscoverySpec.parse(args.where, port=args.port, identity_file=args.identity, known_hosts=args.known_hosts)
    except ValueError as e:
        _say(str(e))
        return EXIT_USAGE
    try:
        report = asyncio.run(discover(spec, timeout=args.timeout))
    except RemoteError as e:
        if getattr(args, "json", False):
            json.dump({"ok": False, "layer": e.layer.value, "error": str(e)}, sys.stdout, indent=2, ensure_ascii=False)
            sys.stdout.write("\n")
        _say(f"{e.layer.value}: {e}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    cands = _candidates(report, spec)
    if getattr(args, "json", False):
        doc = {"ok": not isinstance(cands, str), "report": report.to_dict(),
               "candidates": [] if isinstance(cands, str) else [{"describe": c.describe(), "score": c.score, "runtime": c.target.runtime,
                                                                  "container": c.target.container, "pid": c.job.pid if c.job else None}
                                                                 for c in cands]}
        if isinstance(cands, str):
            doc["error"] = cands
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return EXIT_OK if not isinstance(cands, str) else EXIT_FAILED
    _problems(report, spec)
    if isinstance(cands, str):
        _say(cands)
        return EXIT_FAILED
    try:
        picked = choose_here(cands, yes=args.yes, host=spec.host)
    except NothingChosen:
        _say("nothing chosen")
        return EXIT_FAILED
    if picked is None:
        _say("several candidates and no terminal to ask on: pass --yes to take the best, or name the container "
             f"(HOST:CONTAINER):\n{_listing(cands)}")
        return EXIT_USAGE
    return _write(args, spec, picked)


def _write(args: argparse.Namespace, spec: DiscoverySpec, picked: Candidate) -> int:
    from ..core.discover import FileExists, config_text, write_config

    job = picked.job
    line = "cockpit init " + shlex.join([args.where] + (["--port", str(args.port)] if args.port else []))
    try:
        text = config_text(spec, picked.target, job, command_line=line)
        path = write_config(args.output, text, force=args.force)
    except FileExists as e:
        _say(str(e))
        return EXIT_USAGE
    except ConfigError as e:
        _say(f"config: the written config would not load: {e.message} ({e.key}); nothing was written")
        return EXIT_USAGE
    if job is not None and job.output in ("pipe", "tty", "socket"):
        _say(f"process: pid {job.pid} writes its output to a {job.output} ({job.stdout}): cockpit cannot read it; "
             "the config's [job] log is a file of its own, where the next launch will write")
    print(safe_text(f"wrote {path} for {picked.describe()}\ncheck it: cockpit status --config {shlex.quote(str(path))}"))
    return EXIT_OK
