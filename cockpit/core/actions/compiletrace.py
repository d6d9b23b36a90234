"""Where an attempt's job writes torch.compile's structured trace (``TORCH_TRACE``), and the launch's
part in it: the directory made, older attempts' directories pruned (``[compile] keep``, ``max_mb``).

A ``[job.env]`` or ``[job] command`` that sets ``TORCH_TRACE`` itself wins: cockpit reads that
directory and sets nothing (nor prunes it).  Otherwise, with ``[compile] trace`` on, each attempt
gets its own directory: ``[compile] trace_dir`` (``{attempt}`` replaced), by default
``<log dir>/.cockpit-trace/attempt-N``.  See docs/compile.md.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Config
    from .base import ActionContext

__all__ = ["TracePlan", "trace_plan", "prepare_trace", "trace_command", "DEFAULT_SUBDIR"]

DEFAULT_SUBDIR = ".cockpit-trace"
_IN_COMMAND = re.compile(r"(?:^|[\s;&|(])(?:export\s+)?TORCH_TRACE=(\"[^\"]*\"|'[^']*'|[^\s;&|]+)")


@dataclass
class TracePlan:
    """The trace directory of one attempt, and whether cockpit sets ``TORCH_TRACE`` to it."""

    directory: str = ""
    managed: bool = False
    template: str = ""

    @property
    def env(self) -> dict[str, str]:
        return {"TORCH_TRACE": self.directory} if self.managed and self.directory else {}


def _template(cfg: Config) -> str:
    if cfg.compile.trace_dir:
        return cfg.compile.trace_dir
    return f"{os.path.dirname(cfg.job.log) or '/'}/{DEFAULT_SUBDIR}/attempt-{{attempt}}"


def trace_plan(cfg: Config, attempt: int) -> TracePlan:
    """Attempt ``attempt``'s trace directory: the user's own ``TORCH_TRACE``, else cockpit's (or none)."""
    own = cfg.job.env.get("TORCH_TRACE")
    if own is None:
        m = _IN_COMMAND.search(cfg.job.command)
        own = m.group(1).strip("'\"") if m else None
    if own is not None:
        return TracePlan(own.replace("{attempt}", str(attempt)), managed=False)
    if not cfg.compile.trace:
        return TracePlan()
    template = _template(cfg)
    return TracePlan(template.replace("{attempt}", str(attempt)), managed=True, template=template)


def prune_list(names: list[str], template: str, attempt: int, keep: int) -> list[str]:
    """Of the directories ``names`` that match ``template``, the ones beyond the newest ``keep``
    (by attempt number; this attempt's own counts as one of them)."""
    numbered = [(_num(n, template), n) for n in names if _num(n, template) not in (-1, attempt)]
    numbered.sort(reverse=True)
    return [n for _, n in numbered[max(0, keep - 1):]] if keep > 0 else []


def trace_command(plan: TracePlan) -> str | None:
    """What :func:`prepare_trace` runs first for ``plan`` (None: nothing): the directory emptied and
    made, and the sizes of every attempt's directory.  Safe to run twice, so the launch's
    ``prepare`` batch carries it as a rider (:meth:`.base.ActionContext.ride`) and
    :func:`prepare_trace` gets that answer instead of a round trip of its own."""
    if not plan.managed or not plan.directory:
        return None
    q = shlex.quote
    glob = q(plan.template.split("{attempt}", 1)[0]) + "*"
    d = q(plan.directory)
    # three forks at most (rm where there is something, mkdir, one du for every directory): no
    # subshell, du and cut per directory
    return (f"{{ [ ! -e {d} ] || rm -rf {d}; }}; mkdir -p {d} || exit 3; set --; "
            f"for d in {glob}; do [ -d \"$d\" ] && set -- \"$@\" \"$d\"; done; "
            "[ $# -eq 0 ] || du -sk -- \"$@\" 2>/dev/null; true")


async def prepare_trace(ctx: ActionContext, plan: TracePlan, attempt: int) -> str:
    """Make a managed trace directory empty and ready, remove older attempts' beyond ``keep`` and
    ``max_mb``; returns what was done, for the stage's detail."""
    command = trace_command(plan)
    if command is None:
        return f"TORCH_TRACE={plan.directory} (the job's own)" if plan.directory else ""
    q = shlex.quote
    res = await ctx.run(command, timeout=20)
    if res.exit_code == 3:
        return f"could not create the trace directory {plan.directory}"
    sizes: dict[str, int] = {}
    for line in res.text.splitlines():
        kb, _, name = line.partition("\t")
        if kb.isdigit() and name:
            sizes[name] = int(kb)
    drop = prune_list(list(sizes), plan.template, attempt, ctx.cfg.compile.keep)
    kept = sorted((n for n in sizes if n not in drop and n != plan.directory and _num(n, plan.template) >= 0),
                  key=lambda n: _num(n, plan.template))
    total = sum(sizes[n] for n in kept)
    while kept and total > ctx.cfg.compile.max_mb * 1024:
        oldest = kept.pop(0)
        total -= sizes[oldest]
        drop.append(oldest)
    if drop:
        await ctx.run("rm -rf -- " + " ".join(q(d) for d in drop), timeout=30)
    return f"TORCH_TRACE={plan.directory}" + (f"; removed {len(drop)} older trace dir(s)" if drop else "")


def _num(name: str, template: str) -> int:
    head, _, tail = template.partition("{attempt}")
    ok = name.startswith(head) and name.endswith(tail)
    core = name[len(head):len(name) - len(tail)]
    return int(core) if ok and core.isdigit() else -1
