"""``[slurm]``: how a job is submitted when ``[target] runtime = "slurm"`` (a helper of
:mod:`cockpit.core.config`; the scheduler itself is :mod:`cockpit.core.slurm`).

The target is a login node reached over SSH; ``[job] workdir``, ``log`` and ``[deploy] dest`` are
paths on the cluster's shared file system (the login node and the compute nodes see the same files).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from .errors import ConfigError
from .names import command_word, control_problem, each_line
from .sections import RUNTIME_SHAPES, DeployConfig, JobConfig, TargetConfig

__all__ = ["SlurmConfig", "SlurmScope", "check_slurm"]

#: sbatch's --time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (or UNLIMITED)
_TIME = re.compile(r"(\d+-)?\d+(:\d+){0,2}|UNLIMITED|INFINITE|infinite|unlimited\Z")
_WORD = re.compile(r"[A-Za-z0-9_.:+,=@%/-]+\Z")


def _f(default: Any = dataclasses.MISSING, doc: str = "", *, check: Any = None, factory: Any = None) -> Any:
    md = {"doc": doc, "choices": None, "check": check}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=md)
    return dataclasses.field(default=default, metadata=md)


def _word(v: Any) -> str | None:
    return None if not v or _WORD.match(str(v)) else "must be one word (letters, digits and _.:+,=@%/-)"


def _time(v: Any) -> str | None:
    return None if not v or _TIME.fullmatch(v) else "is not a Slurm time limit (MM, MM:SS, HH:MM:SS, D-HH:MM:SS)"


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be greater than 0"


def _gpus(v: Any) -> str | None:
    if isinstance(v, int):
        return None if v >= 0 else "must be 0 or more"
    return _word(v)


def _extra(v: Any) -> str | None:
    for i, a in enumerate(v):
        if not a.startswith("-"):
            return f"has [{i}] {a!r}, which is not an option (sbatch would take it as the script)"
    return each_line(v)


def _script(v: Any) -> str | None:
    if not v:
        return None
    bad = control_problem(v)
    if bad:
        return bad + ": a path is one line"
    p = PurePosixPath(v)
    return "must be a path relative to [deploy] source, without '..'" if p.is_absolute() or ".." in p.parts else None


@dataclass
class SlurmConfig:
    partition: str = _f("", "Partition to submit to (sbatch --partition): one word of letters, digits and _.:+,=@%/-; empty: the cluster's default.", check=_word)
    account: str = _f("", "Account to charge (sbatch --account): one word of letters, digits and _.:+,=@%/-; empty: your default account.", check=_word)
    time: str = _f("", "Time limit (sbatch --time: MM, HH:MM:SS, D-HH:MM:SS); empty: the partition's default.", check=_time)
    nodes: int = _f(1, "Number of nodes (sbatch --nodes).", check=_positive)
    gpus: int | str = _f(0, "GPUs for the job (sbatch --gpus: 4, or \"a100:4\"); 0: none asked for.", check=_gpus)
    extra_args: list[str] = _f(doc="More sbatch options, each one argument (e.g. [\"--qos=debug\", \"--mem=64G\"]).", factory=list, check=_extra)
    script: str = _f("", "A batch script in [deploy] source (relative path), submitted from [deploy] dest; empty: [job] command is wrapped in a generated script.", check=_script)
    queue_wait: float = _f(60.0, "Seconds verify waits for a queued job to start; after that the attempt reads pending (queued, never failed), or untested/host when the nodes it needs are drained or down.", check=_positive)
    node_local_cache: bool = _f(False, "[cache] paths are on each compute node's own disk (e.g. /tmp/torchinductor_root): clear-cache removes them through a step on each node of the running job (srun --overlap), and the generated batch script clears them on every node before the command.")
    bin: str = _f("", "Directory of the Slurm commands on the login node (sbatch, squeue, scontrol, scancel); empty: the SSH PATH. One line.", check=command_word)


class SlurmScope(Protocol):
    """What :func:`check_slurm` reads of the whole config.  :class:`~.schema.Config` holds
    :class:`SlurmConfig`, so the check names only the sections it reads."""

    @property
    def target(self) -> TargetConfig: ...
    @property
    def slurm(self) -> SlurmConfig: ...
    @property
    def deploy(self) -> DeployConfig: ...
    @property
    def job(self) -> JobConfig: ...
    @property
    def deploy_source(self) -> Path | None: ...


def check_slurm(cfg: SlurmScope, path: Path | None) -> None:
    """Checks across sections for ``runtime = "slurm"``."""

    shape = RUNTIME_SHAPES[cfg.target.runtime]
    if "slurm" not in shape.sections:  # only a runtime that reads [slurm]
        return
    s = cfg.slurm
    if cfg.target.container is not None:
        raise ConfigError(path, "target.container", "is set but runtime = \"slurm\" runs jobs through the scheduler",
                          "remove container (the target is the cluster's login node)")
    if s.script:
        if not cfg.deploy.source or not cfg.deploy.dest:
            raise ConfigError(path, "slurm.script", "needs [deploy] source and dest (the script is deployed with the code)",
                              "set [deploy] source/dest, or remove slurm.script to wrap [job] command")
        src = cfg.deploy_source
        if src is not None and src.is_dir() and not (src / s.script).is_file():
            raise ConfigError(path, "slurm.script", f"{s.script!r} is not a file in [deploy] source ({src})",
                              "give the batch script's path relative to the deploy source, e.g. \"train.sbatch\"")
    elif not cfg.job.command.strip():
        raise ConfigError(path, "job.command", "is empty and [slurm] script is not set: there is nothing to submit",
                          "set [job] command (it is wrapped in a batch script) or [slurm] script")
