"""The attempt's ``compile cache`` stage: did clear-cache really give the job a cold cache?

Judged once, at the verdict (right after verify passed): the job's trace is read whole once
(``--once``, the filtered stream: a few KB), so the judgement does not depend on how far the live
follower got.  After an attempt that ran clear-cache, every graph must be an ``fx_graph_cache_miss``
(``cold ✔``); a hit means the cleared cache is not the one the job uses: the stage fails (layer
container) and its advice names the job's ``TORCHINDUCTOR_CACHE_DIR`` as its environment says
(``/proc/PID/environ``, else ``[job] env``).  Without a clear the hits are information.  A trace
with no cache lookups yet is skipped with the reason; the journal's later ``compile`` summaries
(``cockpit history``: "cache cold"/"cache warm") still tell the cache state then.  Words:
:func:`~cockpit.core.compile_report.cache_stage_words`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .actions.cache_inventory import SOURCE_WORDS, discover_caches
from .compile import TRACE_GLOB, CompileSummary, CompileTracker, shell_command, when_traced
from .compile_report import cache_stage_words
from .layers import Stage
from .remote.base import RemoteError

if TYPE_CHECKING:  # pragma: no cover
    from .actions.base import ActionContext
    from .actions.jobrecord import JobRecord

__all__ = ["compile_cache_stage", "read_trace", "any_trace_command", "STAGE", "TRACE_GLOB"]

STAGE = "compile cache"


def any_trace_command(directory: str) -> str:
    """Prints ``y`` when ``directory`` holds a trace file with bytes: built-ins only (a glob and
    ``[ -s ]``), so a job that wrote no trace costs no Python start-up in the target."""
    return when_traced(directory, "echo y")


async def read_trace(ctx: ActionContext, directory: str) -> CompileSummary | None:
    """The whole trace of ``directory`` now, filtered on the target (one command), or None; an
    empty summary, without starting the filter, when no trace file there has a byte."""
    try:
        look = await ctx.run_cheap(any_trace_command(directory), timeout=10)
        if look.ok and not look.text.strip():
            return CompileTracker().summary()
        res = await ctx.run(shell_command(directory, once=True) + " 2>/dev/null", timeout=60)
    except (RemoteError, OSError, TimeoutError):
        return None
    t = CompileTracker()
    t.feed(res.stdout)
    t.close()
    return t.summary()


async def compile_cache_stage(ctx: ActionContext, job: JobRecord, *, cleared: bool) -> Stage | None:
    """The ``compile cache`` stage of ``job``'s attempt (``cleared``: clear-cache removed caches
    first); None when the job wrote no trace at all (no torch.compile in it, or no python3 for the
    filter): a verdict does not grow a stage about what the job never did."""
    summary = await read_trace(ctx, job.trace_dir) if job.trace_dir else None
    if summary is None or not summary.events:
        return None
    cache_dir, source = "", ""
    if summary is not None and summary.cache_hits and cleared:
        inv = await discover_caches(ctx, job.pid if job.started else None)
        cache_dir, source = inv.dir_of("inductor")
        source = SOURCE_WORDS.get(source, source)
    status, layer, detail, advice = cache_stage_words(summary, cleared=cleared, cache_dir=cache_dir, source=source)
    data: dict[str, Any] = {"cleared": cleared}
    if summary is not None:
        data.update(hits=summary.cache_hits, misses=summary.cache_misses, state=summary.cache_state)
    if cache_dir:
        data["cache_dir"] = cache_dir
    return Stage(STAGE, status, layer, detail, advice=advice, data=data)
