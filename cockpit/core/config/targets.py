"""``[[targets]]`` and ``[[groups]]``: several targets in one config (a helper of :mod:`cockpit.core.config`).

A single ``[target]`` keeps working unchanged.  With ``[[targets]]``, each entry is a ``[target]``
table with a ``name`` (required, unique: it names the target on the command line, in the journal
and in the TUI's target strip) and, optionally, its own ``job``, ``deploy``, ``cache`` and ``gpu``
tables; what an entry does not set it inherits from the top-level sections, the top-level
``[target]`` included (shared ``host``, ``user``, ``port``)::

    [target]
    host = "10.1.2.6"
    user = "root"
    runtime = "pct"

    [[targets]]
    name = "train"
    container = 200

    [[targets]]
    name = "eval"
    container = 201
    [targets.job]
    command = "python3 eval.py"

    [[groups]]
    name = "both"
    targets = ["train", "eval"]

The config loaded is the first target's; :meth:`Config.for_target` gives another's.  Each named
target keeps its own journal (``.cockpit/targets/NAME/journal.jsonl`` unless ``[journal] path``
is set), so two targets' attempts, jobs and action locks never mix; every record also carries the
target's name.  Why separate journals rather than one with a ``target`` field: the engine reads
"the job cockpit launched" and the one-action-at-a-time lock from its journal, and two targets
must be able to run at once (a group attempt) without one adopting the other's job.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .coerce import parse_section, unknown_key
from .errors import ConfigError
from .sections import CacheConfig, DeployConfig, GPUConfig, JobConfig, TargetConfig

__all__ = ["TargetEntry", "parse_targets", "parse_groups", "OVERRIDABLE", "check_name", "unknown_target", "unknown_group"]

#: the sections a target may set for itself (the others are shared)
OVERRIDABLE: dict[str, type] = {"job": JobConfig, "deploy": DeployConfig, "cache": CacheConfig, "gpu": GPUConfig}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")


@dataclass
class TargetEntry:
    """One ``[[targets]]`` entry, its sections resolved (inheritance applied)."""

    name: str
    target: TargetConfig
    sections: dict[str, Any] = field(default_factory=dict)  # section name -> its dataclass, for OVERRIDABLE



def check_name(name: Any) -> str | None:
    if not isinstance(name, str) or not name:
        return "is missing"
    if not _NAME.match(name):
        return f"{name!r} must be letters, digits, _ . - (at most 64, not starting with _ . -): it names a directory"
    return None


def parse_targets(path: Path | None, value: Any, data: dict[str, Any]) -> list[TargetEntry]:
    """``[[targets]]`` with each entry's own tables merged over the top-level ones in ``data``."""

    if not isinstance(value, list) or not value:
        raise ConfigError(path, "targets", "must be an array of tables", "write each one as [[targets]] with name = \"…\" and its [target] keys")
    base_target = data.get("target", {}) if isinstance(data.get("target"), dict) else {}
    target_keys = {f.name for f in dataclasses.fields(TargetConfig)}
    entries: list[TargetEntry] = []
    for i, raw in enumerate(value):
        at = f"targets[{i}]"
        if not isinstance(raw, dict):
            raise ConfigError(path, at, "must be a table", "write it as [[targets]] followed by key = value lines")
        why = check_name(raw.get("name"))
        if why:
            raise ConfigError(path, f"{at}.name", why, "give each target a short unique name, e.g. name = \"train\"")
        name = raw["name"]
        if any(e.name == name for e in entries):
            raise ConfigError(path, f"{at}.name", f"{name!r} names two targets", "give each [[targets]] entry its own name")
        own = {k: v for k, v in raw.items() if k in target_keys}
        for k in raw:
            if k not in target_keys and k not in OVERRIDABLE:
                raise unknown_key(path, f"{at}.{k}", k, sorted(target_keys | set(OVERRIDABLE)))
        target = parse_section(path, at, TargetConfig, {**base_target, **own})
        sections = {}
        for sec, cls in OVERRIDABLE.items():
            if sec in raw:
                if not isinstance(raw[sec], dict):
                    raise ConfigError(path, f"{at}.{sec}", "must be a table", f"write it as [targets.{sec}] after its [[targets]] entry")
                top = data.get(sec, {}) if isinstance(data.get(sec), dict) else {}
                sections[sec] = parse_section(path, f"{at}.{sec}", cls, {**top, **raw[sec]})
        entries.append(TargetEntry(name, target, sections))
    return entries


def parse_groups(path: Path | None, value: Any, names: list[str]) -> dict[str, list[str]]:
    """``[[groups]] name = "both", targets = ["train", "eval"]``: every member a known target."""

    if not isinstance(value, list):
        raise ConfigError(path, "groups", "must be an array of tables", "write each one as [[groups]] with name and targets")
    if not names:
        raise ConfigError(path, "groups", "needs [[targets]]", "define the targets first: [[targets]] with name = \"…\"")
    groups: dict[str, list[str]] = {}
    for i, raw in enumerate(value):
        at = f"groups[{i}]"
        if not isinstance(raw, dict):
            raise ConfigError(path, at, "must be a table", "write it as [[groups]] with name and targets")
        for k in raw:
            if k not in ("name", "targets"):
                raise ConfigError(path, f"{at}.{k}", "unknown key", "a group has name and targets")
        why = check_name(raw.get("name"))
        if why:
            raise ConfigError(path, f"{at}.name", why, "give the group a short name, e.g. name = \"both-nodes\"")
        if raw["name"] in groups:
            raise ConfigError(path, f"{at}.name", f"{raw['name']!r} names two groups", "give each group its own name")
        members = raw.get("targets")
        if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
            raise ConfigError(path, f"{at}.targets", "must be a non-empty array of target names", f"e.g. targets = {names[:2]!r}")
        for j, m in enumerate(members):
            if m not in names:
                close = difflib.get_close_matches(m, names, n=1, cutoff=0.5)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ConfigError(path, f"{at}.targets[{j}]", f"{m!r} is not a target", hint + "known targets: " + ", ".join(names))
        groups[raw["name"]] = list(dict.fromkeys(members))
    return groups


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    return f"did you mean {close[0]!r}? " if close else ""


def unknown_target(path: Path | None, name: str, known: list[str]) -> ConfigError:
    """The error for a target name that no ``[[targets]]`` entry has (:meth:`.schema.Config.for_target`)."""
    return ConfigError(path, "targets", f"no target named {name!r}", _suggest(name, known) + "known targets: " + ", ".join(known))


def unknown_group(path: Path | None, name: str, known: list[str]) -> ConfigError:
    """The error for a group name that no ``[[groups]]`` entry has (:meth:`.schema.Config.group_members`)."""
    return ConfigError(path, "groups", f"no group named {name!r}",
                       _suggest(name, known) + ("known groups: " + ", ".join(known) if known
                                                else "define one: [[groups]] name = \"both\", targets = [...]"))
