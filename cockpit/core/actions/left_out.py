"""A module the deploy left out is the config's doing, not the code's.

A job that fails with ``ModuleNotFoundError: No module named 'mymodels'`` read ``failed (app)``,
"missing module mymodels", with the advice to install it in the environment.  When ``mymodels`` is
a file (or package) of the deploy source that ``[deploy] exclude`` leaves out, the code under test
is fine and never got it: :func:`left_out_cause` says so, at the ``config`` layer, naming the path
and the pattern to change.  A module the source does not hold at all stays the code's (or the
environment's): nothing changes.  The source is walked locally (no round trip), at most
:data:`WALK_LIMIT` entries, only when such an error was read.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from ..config import Config
from ..layers import Layer
from .causebase import Cause
from .deploy_tree import excluded_path

__all__ = ["WALK_LIMIT", "left_out", "left_out_cause"]

#: the most directory entries looked at in the deploy source
WALK_LIMIT = 20000
_MISSING = re.compile(r"missing module ([A-Za-z_][\w.]*)")
_SKIP = frozenset((".git", "__pycache__", "node_modules"))


def left_out(module: str, source: Path | None, exclude: list[str]) -> str | None:
    """The path (relative to ``source``) of ``module``'s top package or file when the deploy source
    holds it and ``exclude`` leaves it out, else None."""
    if source is None or not source.is_dir():
        return None
    top = module.split(".")[0]
    seen = 0
    for root, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP)
        rel_root = os.path.relpath(root, source)
        for name in (top, f"{top}.py"):
            if name in dirs or name in files:
                rel = os.path.normpath(os.path.join(rel_root, name))
                if excluded_path(rel, exclude):
                    return rel
        seen += len(dirs) + len(files)
        if seen > WALK_LIMIT:
            return None
    return None


def left_out_cause(cfg: Config, err: Cause | None) -> Cause | None:
    """``err`` at the ``config`` layer when it is a missing module the deploy left out, else ``err``."""
    m = _MISSING.search(err.detail) if err is not None else None
    if err is None or m is None:
        return err
    rel = left_out(m.group(1), cfg.deploy_source, list(cfg.deploy.exclude))
    if rel is None:
        return err
    hits = [p for p in cfg.deploy.exclude if excluded_path(rel, [p])]
    which = f" (pattern {', '.join(repr(p) for p in hits)})" if hits else ""
    return replace(err, layer=Layer.CONFIG, detail=f"{err.detail}: {rel} is in the deploy source, but [deploy] exclude leaves it out{which}",
                   advice=f"take it out of [deploy] exclude so {rel} is deployed (the code under test never got it)",
                   data={**err.data, "left_out": rel})
