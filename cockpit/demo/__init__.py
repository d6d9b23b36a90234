"""The built-in demo target: the whole loop on this machine, no remote, no root, no GPU, no torch.

``cockpit --demo`` debugs a small training job (``project/``) with the seed story's bug: three
drafter threads compile at once, and a compile in one thread makes the others fail with::

    RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function.
    This is not supported at the moment.

The crash is real: ``project/minitorch`` reproduces the parts of ``torch.compile`` involved (a
process-wide "FX is tracing" flag checked by every compiled function), so the traceback is raised
by real code with torch-like frames.  The fix ships in ``fix/``: one line of ``drafter.py``
(``COMPILE_GUARD = threading.Lock()``) makes the drafters compile one at a time.

The demo's home is ``$XDG_CACHE_HOME/cockpit/demo`` (``~/.cache/cockpit/demo``)::

    src/         the working copy the user edits (deploy source); created once, never overwritten
    workspace/   where the job runs (deploy destination, job workdir); logs in workspace/logs/
    cache/torchinductor_demo/   the compile cache that clear-cache clears
    bin/nvidia-smi              a simulated NVIDIA A100-SXM4-80GB (see nvidia_smi.py)
    run/gpu.json                the job's load, read by that nvidia-smi
    journal.jsonl               the attempt journal

With ``TORCH_TRACE`` set (``[compile] trace``, on in the demo's config), the job writes
torch.compile's structured trace as torch does: its compiled frames (the drafters' on worker threads,
the target model's ``forward`` and ``train_step`` on the main thread), a recompile when the batch
grows, a graph break at ``loss.item()``, and inductor cache misses after clear-cache (hits on a
relaunch), so cockpit's compile view (``T``) has a real account to show.

A newcomer's loop: attempt (ends ``failed``, layer ``app``) → :func:`apply_fix` → attempt (ends
``passed``).  :func:`unapply_fix` brings the bug back, :func:`reset_demo` the shipped working copy.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.config import Config, parse_config

__all__ = [
    "PROJECT_DIR",
    "FIX_DIR",
    "BASELINE_NOTE",
    "FIX_NOTE",
    "DemoPaths",
    "demo_home",
    "demo_paths",
    "ensure_demo",
    "demo_config",
    "reset_demo",
    "apply_fix",
    "unapply_fix",
    "fix_applied",
    "fix_diff",
    "install_nvidia_smi",
]

HERE = Path(__file__).resolve().parent
#: the demo training project as shipped (package data)
PROJECT_DIR = HERE / "project"
#: the fixed files, at the same relative paths as in the project
FIX_DIR = HERE / "fix"
#: attempt notes for the two attempts of the demo story
BASELINE_NOTE = "first try: the job as it is (drafters compile concurrently)"
FIX_NOTE = "serialise the first compile: drafters compile one at a time (COMPILE_GUARD = threading.Lock())"

_SKIP = {"__pycache__", ".pytest_cache", ".mypy_cache"}


def demo_home() -> Path:
    """``$XDG_CACHE_HOME/cockpit/demo`` (a relative ``$XDG_CACHE_HOME`` is ignored, as the spec says)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cockpit" / "demo"


@dataclass(frozen=True)
class DemoPaths:
    """Where the demo keeps everything (all under :func:`demo_home`)."""

    home: Path

    @property
    def src(self) -> Path:
        return self.home / "src"

    @property
    def workspace(self) -> Path:
        return self.home / "workspace"

    @property
    def logs(self) -> Path:
        return self.workspace / "logs"

    @property
    def cache(self) -> Path:
        return self.home / "cache" / "torchinductor_demo"

    @property
    def bin(self) -> Path:
        return self.home / "bin"

    @property
    def nvidia_smi(self) -> Path:
        return self.bin / "nvidia-smi"

    @property
    def gpu_state(self) -> Path:
        return self.home / "run" / "gpu.json"

    @property
    def journal(self) -> Path:
        return self.home / "journal.jsonl"


def demo_paths(home: str | os.PathLike[str] | None = None) -> DemoPaths:
    return DemoPaths(Path(home) if home is not None else demo_home())


# -- files -----------------------------------------------------------------------------------------

def _files(root: Path) -> list[str]:
    """Relative paths of the files under ``root`` (sorted; caches skipped)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP)
        rel = os.path.relpath(dirpath, root)
        for f in sorted(filenames):
            if not f.endswith((".pyc", ".pyo")):
                out.append(f if rel == "." else os.path.join(rel, f))
    return out


def _write(path: Path, data: bytes, mode: int | None = None, *, changed_only: bool = False) -> None:
    """Replace ``path`` atomically (a new inode, a new mtime: no stale bytecode can match it)."""
    if changed_only:
        try:
            if path.read_bytes() == data and (mode is None or (path.stat().st_mode & 0o777) == mode):
                return
        except OSError:
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)


def _copy_tree(src: Path, dest: Path) -> None:
    for rel in _files(src):
        _write(dest / rel, (src / rel).read_bytes())


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def _git_init(src: Path) -> bool:
    """Make ``src`` a git repository with the project as shipped committed, so each attempt
    records a code version (``<commit>+dirty`` once the fix is applied).  Best effort: without git
    the demo works the same, only without versions."""
    git = shutil.which("git")
    if git is None:
        return False
    base = [git, "-c", "init.defaultBranch=main", "-c", "user.name=cockpit demo", "-c", "user.email=demo@cockpit.invalid",
            "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    try:
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "cockpit demo project, as shipped"]):
            r = subprocess.run([*base, *args], cwd=src, env=_git_env(), capture_output=True, timeout=20)
            if r.returncode != 0:
                raise OSError(r.stderr.decode("utf-8", "replace").strip())
    except (OSError, subprocess.SubprocessError):
        shutil.rmtree(src / ".git", ignore_errors=True)
        return False
    return True


def _make_src(paths: DemoPaths) -> None:
    """Copy the shipped project to ``src`` (built aside, then renamed into place)."""
    tmp = paths.home / f".src.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    _copy_tree(PROJECT_DIR, tmp)
    _git_init(tmp)
    try:
        os.rename(tmp, paths.src)
    except OSError:  # another cockpit created it first
        shutil.rmtree(tmp, ignore_errors=True)
        if not paths.src.is_dir():
            raise


# -- the simulated nvidia-smi -----------------------------------------------------------------------

def _interpreter() -> str:
    return sys.executable or shutil.which("python3") or "/usr/bin/python3"


def install_nvidia_smi(paths: DemoPaths | None = None) -> Path:
    """Write ``<home>/bin/nvidia-smi`` (executable) from ``nvidia_smi.py``; returns its path."""
    paths = paths or demo_paths()
    py = _interpreter()
    source = (HERE / "nvidia_smi.py").read_bytes()
    if len(py) < 120 and py.isprintable() and not any(c.isspace() for c in py):
        _write(paths.nvidia_smi, b"#!" + py.encode() + b"\n" + source, 0o755, changed_only=True)
    else:  # a shebang cannot carry this interpreter path: a shell wrapper runs the script
        script = paths.bin / "nvidia_smi.py"
        _write(script, source, 0o644, changed_only=True)
        wrapper = f"#!/bin/sh\nexec {shlex.quote(py)} {shlex.quote(str(script))} \"$@\"\n"
        _write(paths.nvidia_smi, wrapper.encode(), 0o755, changed_only=True)
    return paths.nvidia_smi


# -- setup and config ----------------------------------------------------------------------------

def ensure_demo(home: str | os.PathLike[str] | None = None) -> DemoPaths:
    """Create the demo's home: the working copy (first run only), workspace, cache, nvidia-smi."""
    paths = demo_paths(home)
    paths.home.mkdir(parents=True, exist_ok=True)
    if not paths.src.is_dir():
        _make_src(paths)
    for d in (paths.workspace, paths.logs, paths.cache, paths.gpu_state.parent):
        d.mkdir(parents=True, exist_ok=True)
    install_nvidia_smi(paths)
    return paths


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML form for {v!r}")


def _toml(data: dict[str, dict[str, Any]]) -> str:
    lines: list[str] = []
    for section, table in data.items():
        subtables = {k: v for k, v in table.items() if isinstance(v, dict)}
        lines.append(f"[{section}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in table.items() if not isinstance(v, dict)]
        for name, sub in subtables.items():
            lines.append(f"[{section}.{name}]")
            lines += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in sub.items()]
        lines.append("")
    return "\n".join(lines)


def _config_data(paths: DemoPaths) -> dict[str, dict[str, Any]]:
    ws = paths.workspace
    return {
        "target": {"name": "demo", "transport": "local", "runtime": "none"},
        "job": {
            "workdir": str(ws),
            "command": f"{shlex.quote(_interpreter())} train.py",
            "log": str(paths.logs / "train-{attempt}.log"),
            # setsid, never systemd-run: a system unit would need root
            "launcher": "setsid",
            "progress_pattern": r"^step \d+",
            "startup_timeout": 30.0,
            "healthy_after": 10.0,
            "stop_timeout": 3.0,
            "env": {
                "COCKPIT_DEMO_GPU_STATE": str(paths.gpu_state),
                "TORCHINDUCTOR_CACHE_DIR": str(paths.cache),
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                "COCKPIT_DEMO_CRASH_FILE": str(ws / ".crash-later"),
            },
        },
        # a demo job shows its true colours within seconds; real jobs get the default 10 s
        "verify": {"settle": 3.0, "fate_interval": 1.0, "stall_after": 5.0},
        "deploy": {"source": str(paths.src), "dest": str(ws)},
        "cache": {"paths": [str(paths.cache)]},
        # the job writes torch.compile's structured trace (minitorch writes torch's format) into
        # TORCH_TRACE, which cockpit sets per attempt: the compile view (T) and history's compile summary
        "compile": {"trace": True},
        "gpu": {"nvidia_smi": str(paths.nvidia_smi)},
        "journal": {"path": str(paths.journal)},
    }


def demo_config() -> Config:
    """The demo target's config, its files prepared.  It is built as TOML text and loaded by
    :func:`~cockpit.core.config.parse_config`, so it passes every check a config file passes."""
    paths = ensure_demo()
    cfg = parse_config(_toml(_config_data(paths)))
    cfg.path = None
    return cfg


# -- the fix ---------------------------------------------------------------------------------------

def _src(src_dir: str | os.PathLike[str] | None) -> Path:
    if src_dir is not None:
        return Path(src_dir)
    return ensure_demo().src


def apply_fix(src_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Copy the shipped fix over the working copy (default: the demo's ``src``).

    Returns the files that changed (empty when the fix was already there)."""
    src = _src(src_dir)
    changed = []
    for rel in _files(FIX_DIR):
        data = (FIX_DIR / rel).read_bytes()
        target = src / rel
        if not target.is_file() or target.read_bytes() != data:
            _write(target, data)
            changed.append(target)
    return changed


def unapply_fix(src_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Put the shipped (buggy) version of the fixed files back; returns the files that changed."""
    src = _src(src_dir)
    changed = []
    for rel in _files(FIX_DIR):
        data = (PROJECT_DIR / rel).read_bytes()
        target = src / rel
        if not target.is_file() or target.read_bytes() != data:
            _write(target, data)
            changed.append(target)
    return changed


def fix_applied(src_dir: str | os.PathLike[str] | None = None) -> bool:
    src = _src(src_dir)
    return all((src / rel).is_file() and (src / rel).read_bytes() == (FIX_DIR / rel).read_bytes() for rel in _files(FIX_DIR))


def fix_diff(src_dir: str | os.PathLike[str] | None = None) -> str:
    """What :func:`apply_fix` would change, as a unified diff ("" when nothing)."""
    src = _src(src_dir)
    out: list[str] = []
    for rel in _files(FIX_DIR):
        target = src / rel
        old = target.read_text(encoding="utf-8").splitlines(keepends=True) if target.is_file() else []
        new = (FIX_DIR / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        out += difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}")
    return "".join(out)


def reset_demo(home: str | os.PathLike[str] | None = None) -> Path:
    """Recreate the working copy from the package, discarding edits (and the applied fix).

    The workspace, caches, logs and journal are kept: the next attempt deploys over them.
    Returns the working copy's path."""
    paths = demo_paths(home)
    paths.home.mkdir(parents=True, exist_ok=True)
    if paths.src.exists():
        old = paths.home / f".src.old.{os.getpid()}"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(paths.src, old)
        shutil.rmtree(old, ignore_errors=True)
    ensure_demo(paths.home)
    return paths.src


def job_running(home: str | os.PathLike[str] | None = None) -> bool:
    """A demo job cockpit launched lives now: the latest attempt's job record names a process that
    still runs with the recorded start time (a pid reused since is not it)."""
    from ..core.journal import Journal
    from ..core.procstat import read_local_stat

    path = demo_paths(home).journal
    if not path.is_file():
        return False
    for rec in reversed(Journal(path).attempts()):
        job = rec.job or {}
        pid, start = job.get("pid"), job.get("start_time")
        if isinstance(pid, int) and pid > 1:
            st = read_local_stat(pid)
            return st is not None and st.start_time == start and not st.state.startswith(("Z", "X"))
    return False


def crash_later(seconds: float = 5.0, home: str | os.PathLike[str] | None = None, *, kind: str = "crash") -> Path:
    """Make the running demo job die ``seconds`` from now (a RuntimeError in its main loop).

    A job that passed and then died: the TUI and ``cockpit watch`` record the fate the moment it
    happens, ``cockpit status`` when it next looks, and the history reads ``passed → died (app)``.
    A request no running job took is ignored by the next job (older than the job itself), so a fixed
    attempt never dies of it.
    """
    path = demo_paths(home).workspace / ".crash-later"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{kind} {seconds:g}\n")
    os.replace(tmp, path)
    return path
