"""The whole config: one dataclass holding every section (each section's keys, types and docs
live in :mod:`.sections` and the modules beside it).  Plain data: loading and checks are in :mod:`.load`."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .actions import ActionConfig
from .metrics import MetricsConfig
from .redact import RedactConfig
from .sections import (
    RUNTIME_SHAPES,
    CacheConfig,
    CompileConfig,
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
from .slurm import SlurmConfig
from .targets import TargetEntry, unknown_group, unknown_target

__all__ = ["Config"]


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
    metrics: MetricsConfig = field(default_factory=MetricsConfig)  # cockpit/core/config/metrics.py
    compile: CompileConfig = field(default_factory=CompileConfig)  # torch.compile's trace (docs/compile.md)
    keymap: dict[str, str] = field(default_factory=dict)
    #: ``[[actions]]``: the user's own actions (cockpit/core/config/actions.py)
    actions: list[ActionConfig] = field(default_factory=list)
    signatures: list[SignatureConfig] = field(default_factory=list)
    #: ``[[targets]]`` and ``[[groups]]`` (cockpit/core/config/targets.py); empty for a single [target]
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
    def job_place(self) -> str:
        """Where the job runs, in one line: the host as configured (and its SSH port when set),
        the runtime, and the container, or the workdir for a runtime without one
        (``10.1.2.6 pct 200``): a journal shared by config files side by side tells each target's
        attempts by it (:class:`cockpit.core.journal.Scope`)."""
        shape = RUNTIME_SHAPES.get(self.target.runtime)
        what = self.target.container if shape is not None and shape.container is not None else self.job.workdir
        host = (self.target.host or "local") + (f":{self.target.port}" if self.target.port else "")
        return f"{host} {self.target.runtime} {what}"

    @property
    def journal_path(self) -> Path:
        if self.journal.path:
            return self._local(self.journal.path)
        if self.selected:  # each named target its own journal (see cockpit/core/config/targets.py)
            return self.base_dir / ".cockpit" / "targets" / self.selected / "journal.jsonl"
        return self.base_dir / ".cockpit" / "journal.jsonl"

    @property
    def target_names(self) -> list[str]:
        """Every target's name: the ``[[targets]]`` entries, else the one ``[target]``."""
        return [e.name for e in self.targets] if self.targets else [self.display_name]

    def for_entry(self, entry: TargetEntry) -> Config:
        """This config with ``[[targets]]`` entry ``entry`` applied: its ``[target]`` and its own sections."""
        return dataclasses.replace(self, target=entry.target, selected=entry.name, **entry.sections)

    def for_target(self, name: str) -> Config:
        """This config for target ``name`` (a ConfigError naming the known ones if there is none)."""
        for e in self.targets:
            if e.name == name:
                return self.for_entry(e)
        if not self.targets and name == self.display_name:
            return self
        raise unknown_target(self.path, name, self.target_names)

    def group_members(self, name: str) -> list[str]:
        """The targets of ``[[groups]]`` entry ``name`` (a ConfigError naming the known groups)."""
        if name in self.groups:
            return self.groups[name]
        raise unknown_group(self.path, name, sorted(self.groups))

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
