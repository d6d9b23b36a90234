"""cockpit's configuration: TOML → typed, validated dataclasses.

Every section is a dataclass whose fields carry a ``doc`` (shown in errors and mirrored in
``sample_config.toml``).  Loading never raises a traceback at the user: every problem becomes a
:class:`ConfigError` that names the file, the dotted key, what was wrong and what would be
right, and the CLI exits with code 2.  Unknown keys are rejected with a "did you mean" hint, so
a typo (``startup_timout``) cannot silently fall back to a default.

Lookup order (:func:`find_config`): ``--config PATH``, then ``$COCKPIT_CONFIG``, then
``./cockpit.toml``, then ``$XDG_CONFIG_HOME/cockpit/config.toml`` (``~/.config/cockpit/…``).
Relative paths inside the file (``deploy.source``, ``ssh.identity_file``, …) are relative to the
file's own directory, not to wherever cockpit was started.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from ..paths import check_cache_path
from .actions import check_actions, parse_actions
from .coerce import parse_section, str_table, unknown_key
from .errors import ConfigError
from .notify import check_notify
from .schema import Config
from .sections import RUNTIME_SHAPES, SignatureConfig, TargetConfig
from .slurm import check_slurm
from .targets import parse_groups, parse_targets

__all__ = ["load_config", "find_config", "parse_config", "user_config_path"]


def _check_notify(cfg: Config, path: Path | None) -> None:
    check_notify(cfg.notify, path)



_SECTIONS = {f.name: f for f in dataclasses.fields(Config) if f.name not in ("path", "selected")}


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "cockpit" / "config.toml"


def find_config(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The config file to use, or None when there is none (cockpit then runs the demo)."""
    if explicit is not None:
        if not os.fspath(explicit):
            raise ConfigError(None, "", "--config was given an empty path", "name the config file: --config PATH")
        p = Path(explicit).expanduser()
        if not p.is_file():
            raise ConfigError(p, "", _not_a_file(p), "check the path given to --config")
        return p
    env = os.environ.get("COCKPIT_CONFIG")
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            raise ConfigError(p, "", _not_a_file(p) + " (named by $COCKPIT_CONFIG)", "fix or unset COCKPIT_CONFIG")
        return p
    for p in (Path.cwd() / "cockpit.toml", user_config_path()):
        if p.is_file():
            return p
        if p.exists() or p.is_symlink():  # where a config belongs, but not one: never skipped in silence
            raise ConfigError(p, "", _not_a_file(p), "make it the config file, or give one with --config")
    return None


def _not_a_file(p: Path) -> str:
    """Why a config path that is not a regular file cannot be read."""
    if p.is_dir():
        return "is a directory, not a config file"
    if p.is_symlink() and not p.exists():
        return f"is a broken symbolic link (to {os.readlink(p)})"
    return "file not found" if not p.exists() else "is not a regular file"


def load_config(path: str | os.PathLike[str]) -> Config:
    p = Path(path).expanduser()
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ConfigError(p, "", f"cannot read the file: {e.strerror}", "check the path and its permissions") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(p, "", f"not UTF-8 text (byte {e.start})", "save the file as UTF-8") from None
    return parse_config(text, path=p)


def parse_config(text: str, *, path: Path | None = None) -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, "", f"invalid TOML: {e}", "fix the syntax at that line (strings need quotes, tables need [brackets])") from None
    cfg = Config(path=path.resolve() if path else None)
    for key, value in data.items():
        if key not in _SECTIONS:
            raise unknown_key(path, key, key, _SECTIONS)
        if key == "keymap":
            cfg.keymap = str_table(path, "keymap", value)
        elif key == "actions":
            cfg.actions = parse_actions(path, value)
        elif key == "targets":
            cfg.targets = parse_targets(path, value, data)
        elif key == "groups":
            continue  # after the targets, whatever the order in the file
        elif key == "signatures":
            if not isinstance(value, list):
                raise ConfigError(path, "signatures", "must be an array of tables", "write each one as [[signatures]] with pattern, layer, label, advice")
            cfg.signatures = [parse_section(path, f"signatures[{i}]", SignatureConfig, v) for i, v in enumerate(value)]
            for i, s in enumerate(cfg.signatures):
                if not s.pattern:
                    raise ConfigError(path, f"signatures[{i}].pattern", "is missing", "give a regular expression to match log lines")
        else:
            setattr(cfg, key, parse_section(path, key, type(getattr(cfg, key)), value))
    if "groups" in data:
        cfg.groups = parse_groups(path, data["groups"], [e.name for e in cfg.targets])
    if not cfg.targets:
        _check_whole(cfg, path)
        return cfg
    for entry in cfg.targets:
        _check_whole(cfg.for_entry(entry), path)
    return cfg.for_entry(cfg.targets[0])


def _check_ignored_signatures(cfg: Config, path: Path | None) -> None:
    """``[verify] ignore_signatures`` may name only signatures that exist (a typo would silently ignore nothing)."""
    if not cfg.verify.ignore_signatures:
        return
    from ..probes.signatures import load_signatures, signature_ids, unknown_signature_ids

    user = load_signatures(cfg.user_signatures())
    bad = unknown_signature_ids(cfg.verify.ignore_signatures, user)
    if bad:
        close = difflib.get_close_matches(bad[0], signature_ids(user), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(path, "verify.ignore_signatures", f"{bad[0]!r} is not the id of any signature",
                          hint + "use a built-in kind (cockpit's signatures, e.g. \"python-traceback\") or the id of a [[signatures]] entry")


def _check_whole(cfg: Config, path: Path | None) -> None:
    """Checks that involve more than one key."""
    _check_ignored_signatures(cfg, path)
    _check_notify(cfg, path)
    check_actions(cfg, path)
    check_slurm(cfg, path)
    t = cfg.target
    if t.transport == "ssh" and not t.host:
        raise ConfigError(path, "target.host", "is missing", "set host = \"10.1.2.6\" (an address, a name, or a ~/.ssh/config alias), or transport = \"local\"")
    _check_container(t, path)
    for i, p in enumerate(cfg.cache.paths):
        why = check_cache_path(p, (cfg.job.workdir, cfg.deploy.dest or ""))
        if why:
            raise ConfigError(path, f"cache.paths[{i}]", f"{p!r} {why}", "list only cache directories, e.g. \"/tmp/torchinductor_root\"")
    if "{attempt}" not in cfg.job.log:
        raise ConfigError(path, "job.log", f"{cfg.job.log!r} has no \"{{attempt}}\"", "each attempt needs its own log file, e.g. \"/workspace/train-{attempt}.log\"")
    if cfg.deploy.source and not cfg.deploy.dest:
        raise ConfigError(path, "deploy.dest", "is missing while deploy.source is set", "set dest to the directory inside the target, e.g. \"/workspace\"")
    if isinstance(cfg.ssh.identity_file, str):
        cfg.ssh.identity_file = [cfg.ssh.identity_file]


def _check_container(t: TargetConfig, path: Path | None) -> None:
    """``[target] container`` against the runtime's shape (:data:`.sections.RUNTIME_SHAPES`)."""
    shape = RUNTIME_SHAPES[t.runtime]
    if shape.container is None:
        if t.container is not None:
            raise ConfigError(path, "target.runtime", f"is \"{t.runtime}\" but target.container is set",
                              "set runtime = \"pct\", \"docker\" or \"podman\" to use the container, or remove container")
        return
    if t.container is None:
        raise ConfigError(path, "target.container", f"is required when target.runtime = \"{t.runtime}\"", shape.container_hint)
    if shape.container is int and not isinstance(t.container, int):
        raise ConfigError(path, "target.container", f"{t.container!r} is not a Proxmox container id", shape.container_hint)
    if shape.container is str:
        t.container = str(t.container)


