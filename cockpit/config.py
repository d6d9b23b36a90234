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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from .config_actions import ActionConfig, check_actions, parse_actions
from .config_metrics import MetricsConfig
from .config_redact import RedactConfig
from .config_sections import (
    CacheConfig,
    DeployConfig,
    GPUConfig,
    JobConfig,
    JournalConfig,
    LoopConfig,
    NotifyConfig,
    SignatureConfig,
    SSHConfig,
    TargetConfig,
    UIConfig,
    VerifyConfig,
)
from .config_slurm import SlurmConfig, check_slurm
from .config_targets import TargetEntry, for_target, group_members, parse_groups, parse_targets
from .core.layers import Layer
from .core.paths import check_cache_path, norm_remote_path

__all__ = ["Config", "ConfigError", "CacheConfig", "DeployConfig", "GPUConfig", "JobConfig", "JournalConfig", "LoopConfig", "NotifyConfig", "SignatureConfig", "SSHConfig", "TargetConfig", "UIConfig", "VerifyConfig", "load_config", "find_config", "parse_config", "user_config_path", "check_cache_path", "norm_remote_path"]


class ConfigError(Exception):
    """A problem in a config file: names the file, the dotted key, what is wrong and the fix."""

    layer = Layer.CONFIG

    def __init__(self, path: str | os.PathLike[str] | None, key: str, problem: str, fix: str = "") -> None:
        self.path = str(path) if path else "<config>"
        self.key = key
        self.problem = problem
        self.fix = fix
        super().__init__(self.message)

    @property
    def message(self) -> str:
        where = f"{self.path}: {self.key}" if self.key else self.path
        return f"{where}: {self.problem}" + (f"\n  fix: {self.fix}" if self.fix else "")

    def to_dict(self) -> dict[str, Any]:
        return {"layer": "config", "file": self.path, "key": self.key, "problem": self.problem, "fix": self.fix}


def _check_notify(cfg: Config, path: Path | None) -> None:
    from .core.notify.check import check_notify  # event kinds, an empty command, a webhook that is not http(s)

    check_notify(cfg.notify, path)

# -- end of [notify] ---------------------------------------------------------------------------------


@dataclass
class Config:
    target: TargetConfig = field(default_factory=TargetConfig)
    ssh: SSHConfig = field(default_factory=SSHConfig)
    job: JobConfig = field(default_factory=JobConfig)
    deploy: DeployConfig = field(default_factory=DeployConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    gpu: GPUConfig = field(default_factory=GPUConfig)
    ui: UIConfig = field(default_factory=UIConfig)
    journal: JournalConfig = field(default_factory=JournalConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    redact: RedactConfig = field(default_factory=RedactConfig)
    slurm: SlurmConfig = field(default_factory=SlurmConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)  # cockpit/config_metrics.py
    keymap: dict[str, str] = field(default_factory=dict)
    #: ``[[actions]]``: the user's own actions (cockpit/config_actions.py)
    actions: list[ActionConfig] = field(default_factory=list)
    signatures: list[SignatureConfig] = field(default_factory=list)
    #: ``[[targets]]`` and ``[[groups]]`` (cockpit/config_targets.py); empty for a single [target]
    targets: list[TargetEntry] = field(default_factory=list)
    groups: dict[str, list[str]] = field(default_factory=dict)
    #: the file this came from (None for built-in configs such as the demo)
    path: Path | None = None
    #: which of ``targets`` this config is for (None: a single [target])
    selected: str | None = None

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    @property
    def display_name(self) -> str:
        return self.target.name or self.target.host or "local"

    @property
    def journal_path(self) -> Path:
        if self.journal.path:
            return self._local(self.journal.path)
        if self.selected:  # each named target its own journal (see cockpit/config_targets.py)
            return self.base_dir / ".cockpit" / "targets" / self.selected / "journal.jsonl"
        return self.base_dir / ".cockpit" / "journal.jsonl"

    @property
    def target_names(self) -> list[str]:
        """Every target's name: the ``[[targets]]`` entries, else the one ``[target]``."""
        return [e.name for e in self.targets] if self.targets else [self.display_name]

    def for_target(self, name: str) -> Config:
        """This config for target ``name`` (a ConfigError naming the known ones if there is none)."""
        return for_target(self, name)

    def group_members(self, name: str) -> list[str]:
        """The targets of ``[[groups]]`` entry ``name`` (a ConfigError naming the known groups)."""
        return group_members(self, name)

    @property
    def deploy_source(self) -> Path | None:
        return self._local(self.deploy.source) if self.deploy.source else None

    def _local(self, p: str) -> Path:
        path = Path(os.path.expanduser(p))
        return path if path.is_absolute() else (self.base_dir / path)

    def user_signatures(self) -> list[dict[str, Any]]:
        """``[[signatures]]`` as the dicts :func:`cockpit.core.probes.signatures.load_signatures` reads."""
        return [{"pattern": s.pattern, "layer": s.layer, "label": s.label or s.pattern, "advice": s.advice,
                 "severity": s.severity, "kind": s.id or f"user-{i + 1}"} for i, s in enumerate(self.signatures)]

    def log_path(self, attempt: int) -> str:
        return self.job.log.replace("{attempt}", str(attempt))


_SECTIONS = {f.name: f for f in dataclasses.fields(Config) if f.name not in ("path", "selected")}


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "cockpit" / "config.toml"


def find_config(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The config file to use, or None when there is none (cockpit then runs the demo)."""
    if explicit:
        p = Path(explicit).expanduser()
        if not p.is_file():
            raise ConfigError(p, "", "file not found", "check the path given to --config")
        return p
    env = os.environ.get("COCKPIT_CONFIG")
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            raise ConfigError(p, "", "file not found (named by $COCKPIT_CONFIG)", "fix or unset COCKPIT_CONFIG")
        return p
    for p in (Path.cwd() / "cockpit.toml", user_config_path()):
        if p.is_file():
            return p
    return None


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
            raise _unknown(path, key, key, _SECTIONS)
        if key == "keymap":
            cfg.keymap = _str_table(path, "keymap", value)
        elif key == "actions":
            cfg.actions = parse_actions(path, value)
        elif key == "targets":
            cfg.targets = parse_targets(path, value, data)
        elif key == "groups":
            continue  # after the targets, whatever the order in the file
        elif key == "signatures":
            if not isinstance(value, list):
                raise ConfigError(path, "signatures", "must be an array of tables", "write each one as [[signatures]] with pattern, layer, label, advice")
            cfg.signatures = [_section(path, f"signatures[{i}]", SignatureConfig, v) for i, v in enumerate(value)]
            for i, s in enumerate(cfg.signatures):
                if not s.pattern:
                    raise ConfigError(path, f"signatures[{i}].pattern", "is missing", "give a regular expression to match log lines")
        else:
            setattr(cfg, key, _section(path, key, type(getattr(cfg, key)), value))
    if "groups" in data:
        cfg.groups = parse_groups(path, data["groups"], [e.name for e in cfg.targets])
    if not cfg.targets:
        _check_whole(cfg, path)
        return cfg
    for entry in cfg.targets:
        _check_whole(entry.apply(cfg), path)
    return cfg.targets[0].apply(cfg)


def _unknown(path: Path | None, dotted: str, key: str, known: Any) -> ConfigError:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    fix = f"did you mean '{close[0]}'?" if close else "known keys: " + ", ".join(sorted(known))
    return ConfigError(path, dotted, "unknown key", fix)


def _str_table(path: Path | None, dotted: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(path, dotted, f"must be a table, not {_tname(value)}", f"write it as [{dotted}] with key = \"value\" lines")
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = str(v)
        if not isinstance(v, str):
            raise ConfigError(path, f"{dotted}.{k}", f"must be a string, not {_tname(v)}", f"quote it: {k} = \"...\"")
        out[k] = v
    return out


def _tname(v: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", dict: "a table"}.get(type(v), type(v).__name__)


def _section(path: Path | None, dotted: str, cls: type, value: Any) -> Any:
    if not isinstance(value, dict):
        raise ConfigError(path, dotted, f"must be a table, not {_tname(value)}", f"write it as [{dotted}] followed by key = value lines")
    import typing

    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, v in value.items():
        if key not in fields:
            raise _unknown(path, f"{dotted}.{key}", key, fields)
        f = fields[key]
        kwargs[key] = _coerce(path, f"{dotted}.{key}", hints[key], v, f.metadata)
    return cls(**kwargs)


def _coerce(path: Path | None, dotted: str, hint: Any, v: Any, md: Any) -> Any:
    allowed = _allowed_types(hint)
    doc = md.get("doc", "")
    if dict in allowed and isinstance(v, dict):
        v = _str_table(path, dotted, v)
    elif list in allowed and isinstance(v, list):
        for i, item in enumerate(v):
            if not isinstance(item, str):
                raise ConfigError(path, f"{dotted}[{i}]", f"must be a string, not {_tname(item)}", "quote each entry")
    elif float in allowed and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    elif not any(isinstance(v, t) and not (t is int and isinstance(v, bool)) for t in allowed if t is not type(None)):
        want = " or ".join(_tname_of(t) for t in allowed if t is not type(None))
        raise ConfigError(path, dotted, f"must be {want}, not {_tname(v)} ({v!r})", doc)
    choices = md.get("choices")
    if choices and v not in choices:
        close = difflib.get_close_matches(str(v), choices, n=1, cutoff=0.5)
        hint_ = f"did you mean \"{close[0]}\"? " if close else ""
        raise ConfigError(path, dotted, f"{v!r} is not one of {', '.join(repr(c) for c in choices)}", hint_ + doc)
    check = md.get("check")
    if check is not None and v is not None:
        problem = check(v)
        if problem:
            raise ConfigError(path, dotted, f"{v!r} {problem}", doc)
    return v


def _tname_of(t: type) -> str:
    return {bool: "a boolean (true/false)", int: "an integer", float: "a number", str: "a string", list: "an array of strings", dict: "a table"}.get(t, t.__name__)


def _allowed_types(hint: Any) -> tuple[type, ...]:
    import typing

    origin = typing.get_origin(hint)
    if origin is None:
        return (hint,)
    if origin in (list, dict):
        return (origin,)
    out: list[type] = []
    for a in typing.get_args(hint):
        out.extend(_allowed_types(a))
    return tuple(out)


def _check_ignored_signatures(cfg: Config, path: Path | None) -> None:
    """``[verify] ignore_signatures`` may name only signatures that exist (a typo would silently ignore nothing)."""
    if not cfg.verify.ignore_signatures:
        return
    from .core.probes.signatures import load_signatures, signature_ids, unknown_signature_ids

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
    if t.runtime == "pct" and t.container is None:
        raise ConfigError(path, "target.container", "is required when target.runtime = \"pct\"", "set container = 200 (the CTID from `pct list`)")
    if t.runtime == "pct" and not isinstance(t.container, int):
        raise ConfigError(path, "target.container", f"{t.container!r} is not a Proxmox container id", "set container = 200 (the CTID from `pct list`, a number)")
    if t.runtime in ("docker", "podman"):
        if t.container is None:
            raise ConfigError(path, "target.container", f"is required when target.runtime = \"{t.runtime}\"",
                              f"set container = \"trainer\" (a name or ID from `{t.runtime} ps -a`)")
        t.container = str(t.container)
    if t.runtime in ("none", "slurm") and t.container is not None:
        raise ConfigError(path, "target.runtime", f"is \"{t.runtime}\" but target.container is set",
                          "set runtime = \"pct\", \"docker\" or \"podman\" to use the container, or remove container")


def section_docs(cls: type) -> dict[str, str]:
    """Each key's documentation, for ``sample_config.toml`` checks and help screens."""
    return {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(cls)}
