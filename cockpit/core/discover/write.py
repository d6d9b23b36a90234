"""The config a discovered candidate becomes: TOML text with a comment on every value saying
where it came from, checked by the real loader before it is written, never over an existing file
unless asked (``force``)."""

from __future__ import annotations

import datetime
import json
import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from ..config import parse_config
from .model import JobCandidate, TargetCandidate
from .probe import DiscoverySpec

__all__ = ["attempt_log_path", "config_text", "write_config", "FileExists", "DEFAULT_LOG_NAME", "JOB_ENV_KEYS"]

#: the log a job gets when its output goes to a pipe or a terminal (no file to follow)
DEFAULT_LOG_NAME = "train-{attempt}.log"
#: environment a launch must keep to run the job as it ran (written to [job.env])
JOB_ENV_KEYS = ("CUDA_VISIBLE_DEVICES", "TORCHINDUCTOR_CACHE_DIR", "TORCH_TRACE")
_CTRL = re.compile(r"[\x00-\x1f\x7f]")


class FileExists(Exception):
    """The output file exists and ``force`` was not given."""


def attempt_log_path(path: str) -> str:
    """``/w/train.log`` → ``/w/train-{attempt}.log`` (before the last suffix; none: at the end)."""
    if "{attempt}" in path:
        return path
    head, name = posixpath.split(path)
    stem, ext = posixpath.splitext(name)
    return posixpath.join(head, f"{stem}-{{attempt}}{ext}")


def _s(v: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(v, ensure_ascii=False)


def _c(text: str) -> str:
    """A one-line comment (remote text: no control characters)."""
    return "  # " + _CTRL.sub("?", text)


@dataclass
class _Lines:
    out: list[str]

    def section(self, name: str) -> None:
        if self.out:
            self.out.append("")
        self.out.append(f"[{name}]")

    def put(self, key: str, value: str, why: str) -> None:
        self.out.append(f"{key} = {value}{_c(why)}")

    def note(self, text: str) -> None:
        self.out.append("#" + _c(text)[3:])


def _target(w: _Lines, spec: DiscoverySpec, t: TargetCandidate) -> None:
    w.section("target")
    w.put("host", _s(spec.host), "from the command line")
    if spec.user:
        w.put("user", _s(spec.user), "from the command line")
    if spec.port:
        w.put("port", str(int(spec.port)), "from --port")
    if t.runtime == "none":
        w.put("runtime", _s("none"), "the host itself: the job was found in its process list")
        return
    src = "pct list" if t.runtime == "pct" else f"{t.runtime} ps"
    w.put("runtime", _s(t.runtime), f"from `{src}` on the host ({t.status})")
    if t.runtime == "pct" and t.container and t.container.isdigit():
        w.put("container", t.container, f"from `pct list` (name {t.name or '?'})")
    else:
        w.put("container", _s(t.container or ""), f"from `{src}` (id {t.name or '?'})")
    for line in t.gpu_lines:
        w.note(f"GPU passthrough in its config: {line}")


def _ssh(w: _Lines, spec: DiscoverySpec) -> None:
    if not (spec.identity_file or spec.known_hosts):
        return
    w.section("ssh")
    if spec.identity_file:
        w.put("identity_file", _s(os.path.abspath(os.path.expanduser(spec.identity_file))), "from --identity")
    if spec.known_hosts:
        w.put("known_hosts", _s(os.path.abspath(os.path.expanduser(spec.known_hosts))), "from --known-hosts")


def _job(w: _Lines, job: JobCandidate | None, t: TargetCandidate) -> str:
    """The [job] section; returns the user the cache default is for."""
    w.section("job")
    user = (job.user if job else None) or t.facts.get("user") or "root"
    if job is None:
        w.note(f"no training job was running in {t.label}: write the command and workdir")
        w.put("workdir", _s("/workspace"), "cockpit's default")
        w.put("log", _s("/workspace/" + DEFAULT_LOG_NAME), "cockpit's default")
        return user
    proc = f"/proc/{job.pid}"
    workdir = job.cwd or "/workspace"
    w.put("workdir", _s(workdir), f"from {proc}/cwd" if job.cwd else f"{proc}/cwd unreadable: cockpit's default")
    w.put("command", _s(job.command), f"from {proc}/cmdline (started {_when(job.start)} by {job.user or '?'})")
    if job.log_path and job.output not in ("pipe", "tty", "socket"):
        w.put("log", _s(attempt_log_path(job.log_path)), f"from {job.log_source}: {job.log_path}, {{attempt}} inserted")
    else:
        w.put("log", _s(posixpath.join(workdir, DEFAULT_LOG_NAME)),
              f"its output goes to a {job.output} ({job.stdout or '?'}): the next launch will write here")
    env = {k: v for k, v in (job.env or {}).items() if k in JOB_ENV_KEYS}
    for k, v in (job.env or {}).items():
        if k not in JOB_ENV_KEYS:
            w.note(f"{k}={v} in {proc}/environ (set by its launcher, not written)")
    if env:
        w.section("job.env")
        for k, v in env.items():
            w.put(k, _s(v), f"from {proc}/environ")
    return user


def _when(epoch: int | None) -> str:
    if epoch is None:
        return "at an unknown time"
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def config_text(spec: DiscoverySpec, target: TargetCandidate, job: JobCandidate | None, *, command_line: str = "") -> str:
    """The config for ``target`` (and ``job``), every value commented with its source; raises
    :class:`ConfigError` when the real loader refuses it (nothing is written then)."""
    now = int(datetime.datetime.now(datetime.timezone.utc).timestamp())
    w = _Lines(["#" + _c(f"written by `{command_line}`" if command_line else "written by cockpit init")[3:],
                "#" + _c(f"{_when(now)}: {'pid ' + str(job.pid) + ' in ' if job else ''}{target.label}")[3:]])
    _target(w, spec, target)
    _ssh(w, spec)
    user = _job(w, job, target)
    w.section("cache")
    inductor = (job.env or {}).get("TORCHINDUCTOR_CACHE_DIR") if job else None
    if inductor:
        w.put("paths", f"[{_s(inductor)}]", f"from TORCHINDUCTOR_CACHE_DIR in /proc/{job.pid if job else '?'}/environ")
    else:
        why = "environ unreadable" if job and job.env is None else "TORCHINDUCTOR_CACHE_DIR not set"
        w.put("paths", f"[{_s(f'/tmp/torchinductor_{user}')}]", f"inductor's default for user {user} ({why})")
    text = "\n".join(w.out) + "\n"
    parse_config(text)
    return text


def write_config(path: str | os.PathLike[str], text: str, *, force: bool = False) -> Path:
    """Write ``text`` (validated again) to ``path``; an existing file only with ``force``."""
    p = Path(path).expanduser()
    parse_config(text, path=p)  # a ConfigError leaves the file unwritten
    if p.exists() and not force:
        raise FileExists(f"{p} exists: not overwritten (pass --force to replace it, or -o another file)")
    p.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(p, flags, 0o644)
    except FileExistsError:
        raise FileExists(f"{p} exists: not overwritten (pass --force to replace it, or -o another file)") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return p
