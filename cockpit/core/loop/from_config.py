"""The loop's pieces as a config describes them: the ``[loop]`` section, and the source watcher."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..config import LoopConfig
from .watcher import SourceWatcher

__all__ = ["loop_config", "watcher_for"]


def loop_config(cfg: Any) -> LoopConfig:
    """``cfg.loop`` when config.py has the ``[loop]`` section, else the defaults."""
    lc = getattr(cfg, "loop", None)
    return lc if isinstance(lc, LoopConfig) else LoopConfig()


def watcher_for(cfg: Any, **kw: Any) -> SourceWatcher:
    """A :class:`SourceWatcher` for ``[deploy] source`` with everything the config says:
    ``[deploy] exclude``, ``[loop] debounce`` and ``gitignore``, and, so that cockpit's own writes
    never trigger an attempt, the journal directory (and for a local target the deploy dest, the
    job's workdir and log directory) when they lie inside the source.  ``kw`` overrides."""
    lc = loop_config(cfg)
    ignore: list[Path] = [Path(cfg.journal_path).parent]
    if getattr(getattr(cfg, "target", None), "transport", None) == "local":
        for p in (cfg.deploy.dest, cfg.job.workdir, os.path.dirname(cfg.job.log)):
            if p:
                ignore.append(Path(p))
    args: dict[str, Any] = {"debounce": lc.debounce, "gitignore": lc.gitignore, "ignore_paths": ignore}
    args.update(kw)
    return SourceWatcher(cfg.deploy_source, cfg.deploy.exclude, **args)
