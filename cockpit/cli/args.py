"""The command line's global options and the one resolution of the config.

Global options mean the same wherever they are written, before or after the sub-command::

    cockpit --config B.toml reboot --yes      # reboots B's container
    cockpit reboot --yes --config B.toml      # the same
    cockpit --demo status  /  cockpit status --demo

Why not argparse's usual way (each sub-parser re-adding ``--config``): a sub-parser's defaults are
written over the top-level parser's values, so ``cockpit --config B.toml status`` silently used
``./cockpit.toml``.  Here a sub-parser's copy of a global option writes to ``after_<dest>`` with no
default at all (``argparse.SUPPRESS``), and :func:`merge_globals` folds the two places into one
value; the same option given in both places with different values is a usage error, and so is a
contradiction (``--demo`` with ``--config``).

:func:`resolve` is the one config resolution, used by the TUI and by every sub-command:
``--demo``, else ``--config``, ``$COCKPIT_CONFIG``, ``./cockpit.toml``,
``~/.config/cockpit/config.toml`` (:func:`cockpit.core.config.find_config`); with none of them the TUI
runs the built-in demo and a sub-command says how to make a config (or to add ``--demo``).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.config import Config, ConfigError, find_config, load_config

__all__ = ["GLOBAL_DESTS", "add_globals", "merge_globals", "resolve", "Resolved", "shown_path", "CONFIG_HELP", "NO_CONFIG",
           "port_number", "count", "seconds", "positive_seconds"]

CONFIG_HELP = "config file (default: $COCKPIT_CONFIG, ./cockpit.toml, ~/.config/cockpit/config.toml)"
NO_CONFIG = ("no config file found (looked at --config, $COCKPIT_CONFIG, ./cockpit.toml, ~/.config/cockpit/config.toml)",
             "copy sample_config.toml to ./cockpit.toml and edit it, or add --demo to try the built-in demo")

#: dest → (flags, argparse keyword arguments) of every global option
_OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "config": (("--config", "-c"), {"metavar": "PATH", "help": CONFIG_HELP}),
    "demo": (("--demo",), {"action": "store_true", "help": "use the built-in demo target on this machine (no remote, no root)"}),
    "target": (("--target",), {"metavar": "NAME", "help": "which target of the config ([[targets]] name; default: the first)"}),
    "read_only": (("--read-only",), {"action": "store_true", "help": "act on nothing: the TUI disables every action; "
                                     "a sub-command that acts on the target refuses to run"}),
    "share": (("--share",), {"action": "store_true", "help": "for screen sharing: read-only, and secrets ([job.env] values, tokens, "
                             "passwords, [redact] patterns) hidden on every pane, screen and output"}),
    "json": (("--json",), {"action": "store_true", "help": "print machine-readable JSON instead of text"}),
}
GLOBAL_DESTS = tuple(_OPTIONS)


def add_globals(p: argparse.ArgumentParser, *, top: bool = False, skip: tuple[str, ...] = (), **help_for: str) -> None:
    """Add the global options to ``p``: with their defaults on the top-level parser (``top``), or
    as ``after_<dest>`` without a default on a sub-command's parser, so a value given before the
    sub-command is never overwritten by the sub-parser (see the module doc).  ``skip``: options
    that mean nothing for this sub-command; ``help_for``: a sub-command's own help for one."""
    for dest, (flags, kw) in _OPTIONS.items():
        if dest in skip:
            continue
        kw = {**kw, "help": help_for.get(dest, kw["help"])}
        if top:
            p.add_argument(*flags, dest=dest, default=_unset(dest), **kw)
        else:
            p.add_argument(*flags, dest=f"after_{dest}", default=argparse.SUPPRESS, **kw)


def _unset(dest: str) -> bool | None:
    """A global option's value when it is not given: False for a flag, None for a value."""
    return False if _OPTIONS[dest][1].get("action") == "store_true" else None


def merge_globals(args: argparse.Namespace, parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Fold ``after_<dest>`` into ``<dest>`` (in place) and reject contradictions with a usage
    error (exit 2, argparse's own message format)."""
    for dest, (flags, _kw) in _OPTIONS.items():
        before = getattr(args, dest, None)
        if not hasattr(args, f"after_{dest}"):
            if not hasattr(args, dest):
                setattr(args, dest, _unset(dest))
            continue
        after = getattr(args, f"after_{dest}")
        delattr(args, f"after_{dest}")
        if before not in (None, False) and before != after:
            parser.error(f"{flags[0]} given twice with different values ({before!r} before the sub-command, {after!r} after it): give it once")
        setattr(args, dest, after)
    if args.demo and args.config:
        parser.error("--demo and --config contradict each other: --demo runs the built-in demo, --config names your config; give one")
    if args.share:
        args.read_only = True  # sharing is read-only, everywhere
    return args


@dataclass(frozen=True)
class Resolved:
    """The config in use and where it came from: ``source`` is the file as a person reads it
    (``./cockpit.toml``, ``~/.config/cockpit/config.toml``) or ``demo``; ``fallback``: the demo
    runs because no config exists anywhere (the TUI says so)."""

    cfg: Config
    source: str
    fallback: bool = False

    @property
    def demo(self) -> bool:
        return self.source == "demo"


def resolve(args: argparse.Namespace, *, demo_if_none: bool = False) -> Resolved:
    """The config for these (merged) arguments, ``--target`` applied.  ``demo_if_none``: the TUI's
    rule, the built-in demo when no config exists anywhere; else a :class:`ConfigError`."""
    explicit = getattr(args, "config", None)
    asked = bool(getattr(args, "demo", False))
    if asked or (explicit is None and demo_if_none and _nothing_found()):
        from ..demo import demo_config

        cfg, source = demo_config(), "demo"
    else:
        path = find_config(explicit)
        if path is None:
            raise ConfigError(None, "", *NO_CONFIG)
        cfg, source = load_config(path), shown_path(path)
    name = getattr(args, "target", None)
    return Resolved(cfg.for_target(name) if name else cfg, source, fallback=source == "demo" and not asked)


def _nothing_found() -> bool:
    return find_config(None) is None


def shown_path(path: Path | str | None) -> str:
    """A config path as a person reads it on the status line: ``./cockpit.toml`` under the working
    directory, ``~/…`` under the home directory, else absolute."""
    if path is None:
        return ""
    p = Path(path).absolute()
    for base, label in ((Path.cwd(), "."), (Path.home(), "~")):
        try:
            return f"{label}/{p.relative_to(base)}"
        except ValueError:
            continue
    return str(p)


def port_number(text: str) -> int:
    """An option's TCP port: 1 to 65535 (anything else is a usage error, not a failure later)."""
    n = int(_number(text, int, "a port number"))
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{n} is not a port: give one from 1 to 65535")
    return n


def count(text: str) -> int:
    """An option's count of things (``--last N``, ``--steps N``): 1 or more."""
    n = int(_number(text, int, "a whole number"))
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: give 1 or more")
    return n


def seconds(text: str) -> float:
    """An option's duration: a finite number of seconds, 0 or more."""
    x = _number(text, float, "a number of seconds")
    if not math.isfinite(x) or x < 0:
        raise argparse.ArgumentTypeError(f"{text}: give a number of seconds, 0 or more")
    return x


def positive_seconds(text: str) -> float:
    """An option's time limit: a finite number of seconds, more than 0."""
    x = seconds(text)
    if x == 0:
        raise argparse.ArgumentTypeError(f"{text}: give a number of seconds greater than 0")
    return x


def _number(text: str, kind: type[int] | type[float], what: str) -> float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
