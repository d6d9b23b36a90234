"""The built-in demo target: the whole loop on this machine, no remote, no root."""

from __future__ import annotations

import os
from pathlib import Path

from ..config import Config


def demo_home() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cockpit" / "demo"


def demo_config() -> Config:
    home = demo_home()
    work = home / "workspace"
    work.mkdir(parents=True, exist_ok=True)
    cfg = Config()
    cfg.target.name = "demo"
    cfg.target.transport = "local"
    cfg.target.runtime = "none"
    cfg.job.workdir = str(work)
    cfg.job.log = str(work / ".cockpit" / "train-{attempt}.log")
    cfg.journal.path = str(home / "journal.jsonl")
    cfg.path = None
    return cfg
