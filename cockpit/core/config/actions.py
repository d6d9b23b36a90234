"""``[[actions]]``: the user's own actions, as config (a helper of :mod:`cockpit.core.config`).

Each entry is an :class:`ActionConfig`.  Loading checks every one and names the file, the key and
the fix: unknown fields (with a near match), a missing name or command, duplicate names, a name
that is a built-in action's id, an unknown ``{field}`` in the template or a field inside quotes,
a field this target has no value for (``{container}`` without a container), a key that is not a
key cockpit can bind, that the terminal, tmux or Textual keep for themselves, that a built-in
binding uses (``[keymap]`` applied) or that another action uses, and a destructive action on a
bare home-row key.  How they run: :mod:`cockpit.core.user_actions`.

The built-in keys come from the TUI's registry (:mod:`cockpit.core.keymap`), imported only when a
config has actions: it is plain data (Textual is imported only to build its bindings), so checking
a config never pulls in a UI library (a test proves it).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..action_table import TABLE
from ..keymap import ACTIONS, HOME_ROW
from ..user_template import FIELDS, check_template, template_fields
from .coerce import parse_section
from .errors import ConfigError
from .names import one_line
from .sections import RUNTIME_SHAPES, DeployConfig, TargetConfig

__all__ = ["ActionConfig", "ActionsScope", "parse_actions", "check_actions", "builtin_keys"]


def _f(default: Any, doc: str, *, choices: tuple[str, ...] | None = None, check: Callable[[Any], str | None] | None = None) -> Any:
    """A field with the metadata :mod:`cockpit.core.config` reads (``doc``, ``choices``, ``check``)."""
    return dataclasses.field(default=default, metadata={"doc": doc, "choices": choices, "check": check})


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be greater than 0"


@dataclass
class ActionConfig:
    name: str = _f("", "required: the action's id (letters, digits, - _ .): shown in the help and the palette; `cockpit run-action NAME` runs it.")
    key: str = _f("", "The TUI key that runs it: a letter or digit (G, 5), ctrl+LETTER or f1-f24; empty: palette and CLI only. May not be a key a built-in uses.")
    command: str = _f("", "required: shell code run by /bin/sh; {workdir}, {container}, {log}, {host}, {job_pid}, … are replaced by the target's values, each shell-quoted by cockpit (write {workdir}, not \"{workdir}\").")
    where: str = _f("target", "Where it runs: \"target\" (inside the container, like the job) or \"host\" (on the SSH host, outside any container: pct config {container}).",
                    choices=("target", "host"))
    destructive: bool = _f(False, "true: the TUI asks first, showing the exact command; the CLI asks on a terminal, else needs --yes; it waits its turn like stop and reboot.")
    view: bool = _f(False, "true: the output opens in a scrollable view; false: a notification with the exit code and the last line.")
    timeout: float = _f(60.0, "Seconds before the command is killed (by timeout on the remote side, in whole seconds).", check=_positive)
    help: str = _f("", "One line for the help screen and the palette (default: the command); no control characters.", check=one_line)


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}\Z")
_KEY = re.compile(r"(?:[A-Za-z0-9]|ctrl\+[a-z]|f(?:[1-9]|1[0-9]|2[0-4]))\Z")
#: keys the terminal, tmux or Textual keep for themselves
_KEPT = {"ctrl+c": "copies text and quits (Textual)", "ctrl+q": "quits cockpit", "ctrl+p": "opens the command palette",
         "ctrl+a": "is the screen/tmux prefix", "ctrl+b": "is tmux's prefix", "ctrl+i": "is Tab in a terminal",
         "ctrl+m": "is Enter in a terminal", "ctrl+j": "is a newline in a terminal", "ctrl+h": "is Backspace in a terminal",
         "ctrl+z": "suspends the terminal's job", "ctrl+s": "freezes many terminals (XOFF)"}
_KEY_FIX = "use a letter or digit (G, 5), ctrl+LETTER (ctrl+g) or f1-f24"


def builtin_keys(keymap: dict[str, str] | None = None) -> dict[str, str]:
    """key → the id of the built-in binding that uses it, with ``[keymap]`` applied."""
    km = keymap or {}
    out: dict[str, str] = {}
    for a in ACTIONS:
        for k in (km.get(a.id) or a.key).split(","):
            out.setdefault(k.strip(), a.id)
    return out


def builtin_ids() -> frozenset[str]:
    return frozenset(a.id for a in TABLE) | frozenset(a.id for a in ACTIONS)


def parse_actions(path: Path | None, value: Any) -> list[ActionConfig]:
    """``[[actions]]`` as typed entries (each field checked like any section's)."""

    if not isinstance(value, list):
        raise ConfigError(path, "actions", "must be an array of tables",
                          "write each one as [[actions]] with name, key, command (and where, destructive, view, timeout)")
    return [parse_section(path, f"actions[{i}]", ActionConfig, v) for i, v in enumerate(value)]


def _free_keys(taken: set[str]) -> str:
    free = [c for c in "GIMNOPUWXYZabcgimnoprsxy" if c not in taken]
    return ", ".join(free[:8])


class ActionsScope(Protocol):
    """What the checks of ``[[actions]]`` read of the whole config.  :class:`~.schema.Config`
    holds this module's sections, so the checks name only the sections they read."""

    @property
    def actions(self) -> list[ActionConfig]: ...
    @property
    def keymap(self) -> dict[str, str]: ...
    @property
    def target(self) -> TargetConfig: ...
    @property
    def deploy(self) -> DeployConfig: ...


def check_actions(cfg: ActionsScope, path: Path | None) -> None:
    """Every check that needs the whole config (names, keys, fields); raises :class:`ConfigError`."""

    if not cfg.actions:
        return
    builtins = builtin_keys(cfg.keymap)
    ids = builtin_ids()
    names: dict[str, int] = {}
    keys: dict[str, int] = {}
    for i, a in enumerate(cfg.actions):
        at = f"actions[{i}]"
        if not a.name:
            raise ConfigError(path, f"{at}.name", "is missing", "give the action a short name, e.g. name = \"gpu-dump\"")
        if not _NAME.match(a.name):
            raise ConfigError(path, f"{at}.name", f"{a.name!r} is not a usable name",
                              "use 1-40 letters, digits, '-', '_' or '.', starting with a letter or digit (it is a command-line argument)")
        if a.name in ids:
            raise ConfigError(path, f"{at}.name", f"{a.name!r} is the id of a built-in action", "choose another name, e.g. \"my-" + a.name + "\"")
        if a.name in names:
            raise ConfigError(path, f"{at}.name", f"{a.name!r} is also the name of actions[{names[a.name]}]", "give each action its own name")
        names[a.name] = i
        _check_command(cfg, path, at, a, ConfigError)
        if a.key:
            _check_key(path, at, a, builtins, keys, ConfigError)
            keys[a.key] = i


def _check_command(cfg: ActionsScope, path: Path | None, at: str, a: ActionConfig, error: type[ConfigError]) -> None:
    if not a.command.strip():
        raise error(path, f"{at}.command", "is missing", "give the shell command to run, e.g. command = \"df -h {workdir}\"")
    problem = check_template(a.command)
    if problem is not None:
        raise error(path, f"{at}.command", problem[0], problem[1])
    used = set(template_fields(a.command))
    if "container" in used and RUNTIME_SHAPES[cfg.target.runtime].container is None:
        raise error(path, f"{at}.command", "uses {container} but the target has no container (runtime = \"none\")",
                    "remove {container}, or set [target] runtime (\"pct\", \"docker\" or \"podman\") and container")
    if "deploy_dest" in used and not cfg.deploy.dest:
        raise error(path, f"{at}.command", "uses {deploy_dest} but [deploy] dest is not set", "set [deploy] dest, or use {workdir}")
    assert used <= set(FIELDS)


def _check_key(path: Path | None, at: str, a: ActionConfig, builtins: dict[str, str], keys: dict[str, int],
               error: type[ConfigError]) -> None:
    k = a.key
    if not _KEY.match(k):
        close = difflib.get_close_matches(k.lower(), [f"ctrl+{c}" for c in "defgklnortuvwxy"], n=1, cutoff=0.8)
        raise error(path, f"{at}.key", f"{k!r} is not a key cockpit binds", (f"did you mean {close[0]!r}? " if close else "") + _KEY_FIX)
    taken = set(builtins) | set(keys) | set(_KEPT)
    if k in _KEPT:
        raise error(path, f"{at}.key", f"{k!r} {_KEPT[k]}", f"choose another key; free: {_free_keys(taken)}")
    if k in builtins:
        raise error(path, f"{at}.key", f"{k!r} is the key of the built-in {builtins[k]!r}",
                    f"choose a free key ({_free_keys(taken)}), or move the built-in in [keymap]: {builtins[k]} = \"…\"")
    if k in keys:
        raise error(path, f"{at}.key", f"{k!r} is also the key of actions[{keys[k]}]", f"give each action its own key; free: {_free_keys(taken)}")
    if a.destructive and k in HOME_ROW:
        raise error(path, f"{at}.key", f"{k!r}: a destructive action may not sit on a bare home-row key",
                    f"use a capital letter or ctrl+{k} (free: {_free_keys(taken)})")
