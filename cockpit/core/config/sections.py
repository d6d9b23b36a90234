"""The sections of cockpit's configuration as typed dataclasses (a part of :mod:`cockpit.core.config`,
which loads and validates them and re-exports every name here).

Each field is made with :func:`_f`: its ``doc`` is shown in errors and mirrored in
``sample_config.toml``; ``choices`` and ``check`` (a function answering a problem or None) are
applied by the loader.  Sections with rules of their own live in their own modules
(``config_actions``, ``config_redact``).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..layers import Layer
from .names import command_word, each_line, ident, one_line, remote_path, target_name
from .notify import DEFAULT_ON

__all__ = ['RuntimeShape', 'RUNTIME_SHAPES', 'RUNTIME_NAMES', 'TargetConfig', 'SSHConfig', 'JobConfig', 'VerifyConfig', 'DeployConfig', 'CacheConfig', 'GPUConfig', 'UIConfig', 'JournalConfig', 'LoopConfig', 'SignatureConfig', 'NotifyConfig', 'CompileConfig', '_f', '_positive', '_non_negative']


def _f(default: Any = dataclasses.MISSING, doc: str = "", *, choices: Sequence[str] | None = None,
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


def _abs_remote(v: Any) -> str | None:  # see config_names: one line, absolute
    return remote_path(v)


_CONTAINER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,254}\Z")


def _container_ref(v: Any) -> str | None:
    """A CTID (a positive integer) or a docker/podman container name or ID (docker's own rule)."""
    if isinstance(v, int):
        return None if v > 0 else "must be a positive container id"
    return None if _CONTAINER_NAME.match(v) else "must be a Proxmox CTID (a number) or a docker/podman container name or ID (letters, digits, _ . -; not starting with _ . -)"


@dataclass(frozen=True)
class RuntimeShape:
    """What ``[target]`` needs for one runtime, as plain data the loader checks (the runtimes
    themselves live above the config, in :mod:`cockpit.core.runtimes`, which registers a shape
    here with each runtime it adds)."""

    #: the type of ``[target] container`` it needs (``int``: a CTID; ``str``: a name or ID), or
    #: None: it takes no container and one that is set is an error
    container: type | None = None
    #: the fix a missing or wrong container gets in its error ("" without a container)
    container_hint: str = ""
    #: the ``[target]`` key that names its host-side command ("pct", "docker"…; "" for none)
    tool: str = ""
    #: the config sections it reads besides ``[target]`` (``("slurm",)`` for Slurm)
    sections: tuple[str, ...] = ()


#: every runtime ``[target] runtime`` may name → its shape (the table, not ``==``, says what a
#: runtime takes); :func:`cockpit.core.runtimes.register` adds to it
RUNTIME_SHAPES: dict[str, RuntimeShape] = {
    "pct": RuntimeShape(int, "set container = 200 (the CTID from `pct list`, a number)", "pct"),
    "docker": RuntimeShape(str, "set container = \"trainer\" (a name or ID from `docker ps -a`)", "docker"),
    "podman": RuntimeShape(str, "set container = \"trainer\" (a name or ID from `podman ps -a`)", "podman"),
    "none": RuntimeShape(),
    "slurm": RuntimeShape(sections=("slurm",)),
}


class _RuntimeNames(Sequence[str]):
    """The names in :data:`RUNTIME_SHAPES`, read when asked (a runtime registered later is one)."""

    def __getitem__(self, i: Any) -> Any:
        return list(RUNTIME_SHAPES)[i]

    def __len__(self) -> int:
        return len(RUNTIME_SHAPES)

    def __iter__(self) -> Iterator[str]:
        return iter(list(RUNTIME_SHAPES))

    def __contains__(self, v: object) -> bool:
        return v in RUNTIME_SHAPES


RUNTIME_NAMES: Sequence[str] = _RuntimeNames()


@dataclass
class TargetConfig:
    name: str = _f("", "A short name shown in the status line, the tmux title and the journal (default: the host): letters, digits, space and . _ - @ + : (1-64, starting with a letter or digit); no control characters or newlines: it goes into scripts, titles and file names. E.g. name = \"ct200\".", check=target_name)
    host: str = _f("", "SSH host name, address, or an alias from ~/.ssh/config.", check=_ssh_word)
    user: str | None = _f(None, "SSH user (default: from ~/.ssh/config, else your login name).", check=_ssh_word)
    port: int | None = _f(None, "SSH port (default: from ~/.ssh/config, else 22).", check=_port)
    runtime: str = _f("none", "Where the job runs: \"pct\" (a Proxmox LXC container on the host), \"docker\" or \"podman\" (a container of that engine on the host), \"none\" (the host itself) or \"slurm\" (submitted from a login node, see [slurm]).", choices=RUNTIME_NAMES)
    container: int | str | None = _f(None, "The container: its id (CTID) when runtime = \"pct\"; its name or ID when runtime = \"docker\" or \"podman\".", check=_container_ref)
    pct: str = _f("pct", "The pct command on the host (an absolute path if it is not on the SSH PATH); one line, not starting with '-'.", check=command_word)
    docker: str = _f("docker", "The docker command on the host, for runtime = \"docker\"; one line, not starting with '-'.", check=command_word)
    podman: str = _f("podman", "The podman command on the host, for runtime = \"podman\"; one line, not starting with '-'.", check=command_word)
    transport: str = _f("ssh", "How to reach the host: \"ssh\", or \"local\" for this machine (the demo, or a job on your own box).", choices=("ssh", "local"))


@dataclass
class SSHConfig:
    known_hosts: str | None = _f(None, "known_hosts file used to verify the host key (default: UserKnownHostsFile from the ssh config, else ~/.ssh/known_hosts). Host keys are always verified: cockpit refuses to connect when the ssh config says UserKnownHostsFile none or /dev/null, and never accepts an unknown key whatever StrictHostKeyChecking says. It must be a regular file of at most 16 MiB (a device or a FIFO would be read without end).", check=lambda v: "checks no host key: name a known_hosts file that has the host's key (ssh-keyscan -p PORT HOST >> FILE)" if v and os.path.realpath(os.path.expanduser(v)) == os.devnull else None)
    identity_file: str | list[str] | None = _f(None, "Private key file(s) (default: ~/.ssh/config, then the usual ~/.ssh/id_* keys and the agent); each a regular file of at most 1 MiB.")
    keepalive_interval: float = _f(15.0, "Seconds between SSH keepalives; a dead link is noticed after 3 missed ones.", check=_positive)
    connect_timeout: float = _f(10.0, "Seconds to wait for the TCP connection and login.", check=_positive)
    config_file: str | None = _f(None, "OpenSSH client config to honour (default: ~/.ssh/config when it exists; \"\" for none).")
    forward_agent: bool = _f(False, "Forward your ssh-agent to the host (like ssh -A): anyone root there can then use your keys. ForwardAgent in the ssh config is ignored; only this turns it on.")
    reconnect_for: float = _f(60.0, "Seconds verify keeps reconnecting (with backoff) after the connection is lost before it gives up; the attempt then ends interrupted and the job keeps running.", check=_positive)


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
    zombie_grace: float = _f(2.0, "Seconds a fresh zombie of the job (an orphan PID 1 has yet to reap, right after stop; a main process its supervisor has yet to reap and record) is re-checked before it counts as left over or as the job's death; PID 1 is said not to reap only when one outlives it.", check=_non_negative)
    env: dict[str, str] = _f(doc="Environment variables for the job (values are strings). PYTHONUNBUFFERED is \"1\" unless set here (\"\" turns it off): into a file, Python's print is block-buffered and the log would arrive in bursts.", factory=dict, check=_env_keys)
    umask: str = _f("022", "The job's umask (octal): its logs and checkpoints readable by a teammate; \"077\" keeps them private.", check=_umask)
    py_spy: str = _f("", "py-spy inside the target, for the threads' stacks of a stalled job (cockpit stacks); empty: py-spy on the target's PATH, else the kernel's view of each thread. One line, not starting with '-'.", check=command_word)
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
    fate_interval: float = _f(1.0, "Seconds between checks of a passed attempt's job after its verdict (its fate: running, finished, died, diverged, stopped, vanished).", check=_positive)
    nonfinite: str = _f("fail", "A metric of [metrics] required_finite (the loss by default) that turns NaN or inf: \"fail\" fails verify, and after a pass the job's fate is diverged (app); \"warn\" says so in the verdict and leaves both as they are.", choices=("fail", "warn"))
    startup_timeout_from: str = _f("launch", "Where [job] startup_timeout counts from. \"launch\": the job's launch. \"first_compile\": the end of the job's first torch.compile, as its trace shows it (docs/compile.md): until a compile starts the deadline is launch + startup_timeout, as with \"launch\"; while the first compile runs the job is pending (compiling), up to compile_timeout from launch; once it ended the deadline is that end + startup_timeout. Without a readable trace ([compile] trace off, the filter not running) it counts from launch and the verdict says so.", choices=("launch", "first_compile"))
    compile_timeout: float = _f(1800.0, "With startup_timeout_from = \"first_compile\": seconds from launch a job may spend before its first torch.compile ends (never less than [job] startup_timeout); a job still compiling then fails verify (app: still compiling `f`). Unused with \"launch\".", check=_positive)


@dataclass
class DeployConfig:
    source: str | None = _f(None, "Local directory (or file) to deploy; relative to this config file.")
    dest: str | None = _f(None, "Directory inside the target to deploy into.", check=_abs_remote)
    exclude: list[str] = _f(doc="Glob patterns not deployed (matched against relative paths and names).", factory=lambda: [".git", "__pycache__", "*.pyc", ".cockpit", ".venv"])
    follow_symlinks: bool = _f(False, "Symlinks in the source are always deployed as what they point to (never as links, which would dangle in the target); one that points outside the source is refused unless this is true. Loops are always refused.")


@dataclass
class CacheConfig:
    paths: list[str] = _f(doc="Cache directories inside the target that clear-cache removes (e.g. the inductor cache); each one line.", factory=lambda: ["/tmp/torchinductor_root"], check=each_line)
    discover: bool = _f(False, "clear-cache also finds the compile caches the job really uses (TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR from the running job's /proc/PID/environ, else [job] env, else /tmp/torchinductor_$USER and ~/.triton/cache) and shows each with its size and entry count. false (the default) only shows them and removes [cache] paths alone; true removes the found ones too. Every path, found or configured, is judged by the same guard (never the workdir, the deploy dest, a system or home directory).")


@dataclass
class GPUConfig:
    nvidia_smi: str = _f("nvidia-smi", "The nvidia-smi command (an absolute path if it is not on pct exec's minimal PATH); one line, not starting with '-'.", check=command_word)
    where: str = _f("container", "Run nvidia-smi inside the \"container\" or on the \"host\".", choices=("container", "host"))
    timeout: float = _f(5.0, "Seconds before a hung nvidia-smi is killed and reported as a gpu failure.", check=_positive)
    enabled: bool = _f(True, "Set false on targets without a GPU.")
    stream: bool = _f(True, "Keep one `nvidia-smi --query-gpu=… -lms N` running for the GPU values instead of running nvidia-smi every refresh; polled where it cannot stream (the status line says which).")
    apps_interval: float = _f(10.0, "Seconds between full GPU probes (the per-process list, the host's /proc) while the GPU values stream.", check=_positive)


@dataclass
class UIConfig:
    theme: str = _f("dark", "Theme name (a file in themes/ or your config dir's themes/); one line.", check=one_line)
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
    label: str = _f("", "Short name shown for a match (one line).", check=one_line)
    advice: str = _f("", "One line of advice shown with a match.", check=one_line)
    severity: str = _f("error", "\"error\": a match fails a verdict; \"warning\": it is shown, never fails anything.", choices=("error", "warning"))
    id: str = _f("", "A short id for this signature (used by [verify] ignore_signatures): letters, digits, . _ - (starting with a letter or digit); default \"user-N\".", check=ident)


# -- [compile]: torch.compile's structured trace (docs/compile.md) ------------------------------------

@dataclass
class CompileConfig:
    trace: bool = _f(True, "Set TORCH_TRACE for each attempt, so torch.compile writes its structured trace and cockpit shows the compiled frames, recompiles (and why), graph breaks, cache hits and compile failures. When [job] env or the command sets TORCH_TRACE itself, cockpit reads that directory and sets nothing.")
    trace_dir: str = _f("", "The trace directory inside the target; \"{attempt}\" becomes the attempt number. Default: a directory per attempt beside the job's log, <log dir>/.cockpit-trace/attempt-N.", check=remote_path)
    max_mb: float = _f(256.0, "Most megabytes the kept trace directories may hold together on the target: at launch, older attempts' traces are removed, oldest first, until the rest fit.", check=_positive)
    keep: int = _f(5, "Trace directories of this many attempts are kept; older ones are removed at launch (0: keep them all).", check=_non_negative)


# -- [notify]: notifications that reach you (cockpit/core/notify) -------------------------------------

def _default_on() -> list[str]:
    return list(DEFAULT_ON)


@dataclass
class NotifyConfig:
    command: str | list[str] | None = _f(None, "A command run on this machine (never on the target) for each notification, with the event as JSON on stdin (docs/notifications.md); a string runs with /bin/sh -c in this file's directory, an array runs as it is.")
    webhook: str | None = _f(None, "An http(s) URL that receives each notification as a JSON POST, Slack-compatible (\"text\" plus the event's fields). It holds a token: cockpit shows only its scheme and host. A user:password@ in it is sent as HTTP Basic auth (an Authorization header), never as part of the host.")
    on: list[str] = _f(doc="Which events notify the command and the webhook: \"verdict\" (every attempt), \"failed\" (attempts that did not pass), and a passed attempt's job that \"died\", \"diverged\", \"vanished\", \"stalled\" or \"finished\".", factory=_default_on)
    timeout: float = _f(10.0, "Seconds the command may run, or the webhook may take to answer, before it counts as failed (the command is killed). Never retried.", check=_positive)
    max_per_minute: int = _f(6, "At most this many notifications a minute; the next one sent says how many were dropped. An identical event within 10 minutes is never sent twice. 0: no limit.", check=_non_negative)
