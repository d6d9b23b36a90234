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
import re
import sys
from collections.abc import Callable
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
from .core.layers import Layer
from .core.paths import check_cache_path, norm_remote_path

__all__ = ["Config", "ConfigError", "load_config", "find_config", "parse_config", "user_config_path", "check_cache_path", "norm_remote_path"]


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


def _f(default: Any = dataclasses.MISSING, doc: str = "", *, choices: tuple[str, ...] | None = None,
       check: Callable[[Any], str | None] | None = None, factory: Callable[[], Any] | None = None) -> Any:
    md = {"doc": doc, "choices": choices, "check": check}
    if factory is not None:
        return field(default_factory=factory, metadata=md)
    return field(default=default, metadata=md)


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be greater than 0"


def _non_negative(v: Any) -> str | None:
    return None if v >= 0 else "must be 0 or more"


def _port(v: Any) -> str | None:
    return None if 1 <= v <= 65535 else "must be a TCP port between 1 and 65535"


def _regex(v: Any) -> str | None:
    if v is None:
        return None
    try:
        re.compile(v)
    except re.error as e:
        return f"is not a valid regular expression ({e})"
    return None


def _umask(v: Any) -> str | None:
    return None if re.fullmatch(r"0?[0-7]{3}", v) else "must be an octal umask such as \"022\" or \"077\""


_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _env_keys(v: Any) -> str | None:
    """Environment variable names only: a key like ``-S…`` would be an option to ``env``."""
    bad = [k for k in v if not _ENV_KEY.match(k)]
    return None if not bad else f"has {bad[0]!r}, which is not a variable name (letters, digits and _, not starting with a digit)"


def _ssh_word(v: Any) -> str | None:  # a host or user that ssh (the shell key's command line) would read as an option
    bad = v.startswith("-") or any(c.isspace() or not c.isprintable() for c in v)
    return "must not start with '-' or contain spaces or control characters (ssh would read it as an option)" if bad else None


def _abs_remote(v: Any) -> str | None:
    return None if not v or v.startswith("/") else "must be an absolute path inside the target (starting with /)"


@dataclass
class TargetConfig:
    name: str = _f("", "A short name shown in the status line and the journal (default: the host).")
    host: str = _f("", "SSH host name, address, or an alias from ~/.ssh/config.", check=_ssh_word)
    user: str | None = _f(None, "SSH user (default: from ~/.ssh/config, else your login name).", check=_ssh_word)
    port: int | None = _f(None, "SSH port (default: from ~/.ssh/config, else 22).", check=_port)
    runtime: str = _f("none", "Where the job runs: \"pct\" (a Proxmox LXC container on the host) or \"none\" (the host itself).", choices=("pct", "none"))
    container: int | None = _f(None, "The Proxmox container id (CTID) when runtime = \"pct\".", check=lambda v: None if v > 0 else "must be a positive container id")
    pct: str = _f("pct", "The pct command on the host (an absolute path if it is not on the SSH PATH).")
    transport: str = _f("ssh", "How to reach the host: \"ssh\", or \"local\" for this machine (the demo, or a job on your own box).", choices=("ssh", "local"))


@dataclass
class SSHConfig:
    known_hosts: str | None = _f(None, "known_hosts file used to verify the host key (default: ~/.ssh/known_hosts). Host keys are always verified.")
    identity_file: str | list[str] | None = _f(None, "Private key file(s) (default: ~/.ssh/config, then the usual ~/.ssh/id_* keys and the agent).")
    keepalive_interval: float = _f(15.0, "Seconds between SSH keepalives; a dead link is noticed after 3 missed ones.", check=_positive)
    connect_timeout: float = _f(10.0, "Seconds to wait for the TCP connection and login.", check=_positive)
    config_file: str | None = _f(None, "OpenSSH client config to honour (default: ~/.ssh/config when it exists; \"\" for none).")


@dataclass
class JobConfig:
    workdir: str = _f("/workspace", "Directory inside the target where the job runs.", check=_abs_remote)
    command: str = _f("", "The training command, run by /bin/sh -c in workdir. Use absolute paths: pct exec's PATH is minimal.")
    log: str = _f("/workspace/.cockpit/train-{attempt}.log", "Log file inside the target; \"{attempt}\" becomes the attempt number, so each attempt writes a new file.", check=_abs_remote)
    launcher: str = _f("auto", "How the job is started so it outlives the remote call: \"systemd-run\", \"setsid\", or \"auto\" (systemd-run when PID 1 is systemd).", choices=("auto", "systemd-run", "setsid"))
    startup_timeout: float = _f(300.0, "Seconds a starting job may stay silent (loading a model) before it counts as failed; until then it is pending.", check=_positive)
    progress_pattern: str | None = _f(None, "Regular expression for a log line that proves training progresses (e.g. '^step \\d+').", check=_regex)
    healthy_after: float = _f(60.0, "Without a progress_pattern: seconds without a crash after which the job counts as healthy.", check=_positive)
    capture_output: bool = _f(True, "true: cockpit writes the job's stdout and stderr to the log; false: the job writes [job] log itself (its console output goes to LOG.console).")
    stop_timeout: float = _f(10.0, "Seconds between SIGTERM and SIGKILL when stopping the job.", check=_positive)
    env: dict[str, str] = _f(doc="Environment variables for the job (values are strings).", factory=dict, check=_env_keys)
    umask: str = _f("022", "The job's umask (octal): its logs and checkpoints readable by a teammate; \"077\" keeps them private.", check=_umask)
    py_spy: str = _f("", "py-spy inside the target, for the threads' stacks of a stalled job (cockpit stacks); empty: py-spy on the target's PATH, else the kernel's view of each thread.")
    dump_before_stop: bool = _f(True, "Before stop or relaunch of a stalled job, save every thread's stack with its attempt: the one piece of evidence a hang leaves.")
    strays: str = _f("ask", "Copies of the job that cockpit did not start (same command line in the same workdir), found before each launch: \"ask\" (the TUI asks, the CLI reports and goes on), \"stop\" (stop them), \"leave\" (report only). Never matched by pattern.", choices=("ask", "stop", "leave"))


def _stall_after(v: Any) -> str | None:
    if isinstance(v, str):
        return None if v == "auto" else 'must be "auto" or a number of seconds (0: off)'
    return None if v >= 0 else 'must be "auto" or a number of seconds, 0 or more (0: off)'


@dataclass
class VerifyConfig:
    settle: float = _f(10.0, "Seconds after the first progress during which the job must stay alive, keep progressing and log no error before an attempt is passed.", check=_non_negative)
    ignore_signatures: list[str] = _f(doc="Signature ids (the `id` of a [[signatures]] entry or a built-in kind, e.g. \"python-traceback\") that never fail a verdict.", factory=list)
    stall_after: float | str = _f("auto", "Seconds without a progress line after which a live job is stalled (not healthy): \"auto\" is the larger of 10x the median step interval and 120 s; 0 turns stall detection off.", check=_stall_after)
    fate_interval: float = _f(1.0, "Seconds between checks of a passed attempt's job after its verdict (its fate: running, finished, died, stopped, vanished).", check=_positive)


@dataclass
class DeployConfig:
    source: str | None = _f(None, "Local directory (or file) to deploy; relative to this config file.")
    dest: str | None = _f(None, "Directory inside the target to deploy into.", check=_abs_remote)
    exclude: list[str] = _f(doc="Glob patterns not deployed (matched against relative paths and names).", factory=lambda: [".git", "__pycache__", "*.pyc", ".cockpit", ".venv"])
    follow_symlinks: bool = _f(False, "Symlinks in the source are always deployed as what they point to (never as links, which would dangle in the target); one that points outside the source is refused unless this is true. Loops are always refused.")


@dataclass
class CacheConfig:
    paths: list[str] = _f(doc="Cache directories inside the target that clear-cache removes (e.g. the inductor cache).", factory=lambda: ["/tmp/torchinductor_root"])


@dataclass
class GPUConfig:
    nvidia_smi: str = _f("nvidia-smi", "The nvidia-smi command (an absolute path if it is not on pct exec's minimal PATH).")
    where: str = _f("container", "Run nvidia-smi inside the \"container\" or on the \"host\".", choices=("container", "host"))
    timeout: float = _f(5.0, "Seconds before a hung nvidia-smi is killed and reported as a gpu failure.", check=_positive)
    enabled: bool = _f(True, "Set false on targets without a GPU.")


@dataclass
class UIConfig:
    theme: str = _f("dark", "Theme name (a file in themes/ or your config dir's themes/).")
    refresh_interval: float = _f(2.0, "Seconds between refreshes of processes and GPUs.", check=_positive)
    log_lines: int = _f(10000, "Lines of the live log kept in memory (a ring: memory stays flat).", check=_positive)


@dataclass
class JournalConfig:
    path: str | None = _f(None, "Attempt journal (JSON Lines); default .cockpit/journal.jsonl beside this file.")


def _note_template(v: Any) -> str | None:
    try:
        v.format(last_note="x", n=2, attempt=3, files="a.py")
    except (KeyError, IndexError) as e:
        return f"uses an unknown placeholder {e}; known: {{last_note}}, {{n}}, {{attempt}}, {{files}}"
    except ValueError as e:
        return f"is not a valid format string ({e}); write literal braces as {{{{ and }}}}"
    return None


@dataclass
class LoopConfig:
    attempt_on_save: bool = _f(False, "Run an attempt automatically when a save in [deploy] source settles (the TUI can toggle it).")
    debounce: float = _f(1.0, "Seconds a burst of saves must be quiet before it counts as one change.", check=_positive)
    note_template: str = _f("{last_note} (#{n})", "Note of an on-save attempt that reuses the last hypothesis; {last_note}, {n} (its how-many-th try), {attempt}, {files}.", check=_note_template)
    diff_max_bytes: int = _f(200_000, "Largest file (bytes) whose unified diff is written to the journal's diffs/; larger ones get line counts only.", check=_positive)
    notify: bool = _f(True, "Tell you when a verdict lands (terminal bell, tmux message).")
    bell: bool = _f(True, "Ring the terminal bell when a verdict lands.")
    tmux: bool = _f(True, "Inside tmux: show the verdict with display-message and set the window option @cockpit_verdict.")
    gitignore: bool = _f(True, "Also ignore what .gitignore ignores when the source is in a git work tree.")
    busy_retry: float = _f(2.0, "Seconds between retries while another cockpit holds the target.", check=_positive)
    busy_timeout: float = _f(600.0, "Give up waiting for a busy target after this many seconds (0: report at once).", check=_non_negative)


@dataclass
class SignatureConfig:
    pattern: str = _f("", "Regular expression matched against each log line.", check=_regex)
    layer: str = _f("app", "Failure layer of a match.", choices=tuple(layer.value for layer in Layer))
    label: str = _f("", "Short name shown for a match.")
    advice: str = _f("", "One line of advice shown with a match.")
    severity: str = _f("error", "\"error\": a match fails a verdict; \"warning\": it is shown, never fails anything.", choices=("error", "warning"))
    id: str = _f("", "A short id for this signature (used by [verify] ignore_signatures); default \"user-N\".")


# -- [notify]: notifications that reach you (cockpit/core/notify) -------------------------------------

def _default_on() -> list[str]:
    from .core.notify.payload import DEFAULT_ON

    return list(DEFAULT_ON)


@dataclass
class NotifyConfig:
    command: str | list[str] | None = _f(None, "A command run on this machine (never on the target) for each notification, with the event as JSON on stdin (README: Notifications); a string runs with /bin/sh -c in this file's directory, an array runs as it is.")
    webhook: str | None = _f(None, "An http(s) URL that receives each notification as a JSON POST, Slack-compatible (\"text\" plus the event's fields). It holds a token: cockpit shows only its scheme and host.")
    on: list[str] = _f(doc="Which events notify the command and the webhook: \"verdict\" (every attempt), \"failed\" (attempts that did not pass), and a passed attempt's job that \"died\", \"vanished\", \"stalled\" or \"finished\".", factory=_default_on)
    timeout: float = _f(10.0, "Seconds the command may run, or the webhook may take to answer, before it counts as failed (the command is killed). Never retried.", check=_positive)
    max_per_minute: int = _f(6, "At most this many notifications a minute; the next one sent says how many were dropped. An identical event within 10 minutes is never sent twice. 0: no limit.", check=_non_negative)


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
    metrics: MetricsConfig = field(default_factory=MetricsConfig)  # cockpit/config_metrics.py
    keymap: dict[str, str] = field(default_factory=dict)
    #: ``[[actions]]``: the user's own actions (cockpit/config_actions.py)
    actions: list[ActionConfig] = field(default_factory=list)
    signatures: list[SignatureConfig] = field(default_factory=list)
    #: the file this came from (None for built-in configs such as the demo)
    path: Path | None = None

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else Path.cwd()

    @property
    def display_name(self) -> str:
        return self.target.name or self.target.host or "local"

    @property
    def journal_path(self) -> Path:
        return self._local(self.journal.path) if self.journal.path else self.base_dir / ".cockpit" / "journal.jsonl"

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


_SECTIONS = {f.name: f for f in dataclasses.fields(Config) if f.name != "path"}


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
        elif key == "signatures":
            if not isinstance(value, list):
                raise ConfigError(path, "signatures", "must be an array of tables", "write each one as [[signatures]] with pattern, layer, label, advice")
            cfg.signatures = [_section(path, f"signatures[{i}]", SignatureConfig, v) for i, v in enumerate(value)]
            for i, s in enumerate(cfg.signatures):
                if not s.pattern:
                    raise ConfigError(path, f"signatures[{i}].pattern", "is missing", "give a regular expression to match log lines")
        else:
            setattr(cfg, key, _section(path, key, type(getattr(cfg, key)), value))
    _check_whole(cfg, path)
    return cfg


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
    t = cfg.target
    if t.transport == "ssh" and not t.host:
        raise ConfigError(path, "target.host", "is missing", "set host = \"10.1.2.6\" (an address, a name, or a ~/.ssh/config alias), or transport = \"local\"")
    if t.runtime == "pct" and t.container is None:
        raise ConfigError(path, "target.container", "is required when target.runtime = \"pct\"", "set container = 200 (the CTID from `pct list`)")
    if t.runtime == "none" and t.container is not None:
        raise ConfigError(path, "target.runtime", "is \"none\" but target.container is set", "set runtime = \"pct\" to use the container, or remove container")
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


def section_docs(cls: type) -> dict[str, str]:
    """Each key's documentation, for ``sample_config.toml`` checks and help screens."""
    return {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(cls)}
