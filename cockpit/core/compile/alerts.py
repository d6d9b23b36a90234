"""The alerts of a compile summary, each with what to do about it.

- ``recompile_limit`` (error): a frame hit dynamo's recompile limit and runs eagerly from then on.
- ``recompile_storm`` (warning): a frame within 2 compiles of the limit.
- ``fullgraph_break`` (error): a graph break in a frame compiled with ``fullgraph=True`` (only where
  the trace says so: torch 2.14's metrics do not; there the break shows as a ``compile_failure``).
- ``compile_failure`` (error): a compile that failed (``fail_type``, ``fail_reason``, the user's line).
- ``graph_breaks`` (info): frames split by graph breaks, with the reasons.
- ``thread_race`` (error): compiles on different threads at overlapping times.
- ``threaded_compile`` (warning): compiles entered from worker threads (torch ≥ 2.5 writes the
  process id, not the thread, and runs compiles under one lock, so this is what a race looks like
  in its trace: compiles from ``threading``'s bootstrap, one after the other).
- ``cache_cold`` (info): every compile-cache lookup missed (a cold or cleared cache).
"""

from __future__ import annotations

from cockpit.core.compile.model import Alert, CompileSpan, CompileSummary

RACE_ADVICE = ("Compile on one thread: call the compiled function once on the main thread before starting the "
               "workers (warm-up), or guard the first call with a lock; FX tracing is not thread-safe.")


def _storm(s: CompileSummary, limit: int) -> list[Alert]:
    out = []
    for f in s.frames:
        reasons = f"; last reason: {f.recompile_reasons[-1]}" if f.recompile_reasons else ""
        if f.limit_hit:
            out.append(Alert("recompile_limit", "error",
                             f"{f.function} ({f.where}) hit the recompile limit ({limit}) after {f.compiles} compiles: it runs eagerly now{reasons}",
                             "Find what changes between calls (the reasons name the guard: a shape, a dtype, a Python value) and make it "
                             "stable, or mark the dimension dynamic (torch._dynamo.mark_dynamic), or raise "
                             "torch._dynamo.config.recompile_limit (cache_size_limit before torch 2.6) if the variants are few and wanted.",
                             f.key))
        elif f.compiles >= 3 and f.compiles >= limit - 2:
            out.append(Alert("recompile_storm", "warning",
                             f"{f.function} ({f.where}) compiled {f.compiles} times, the limit is {limit}{reasons}",
                             "Each new shape or guarded value compiles again; the next ones will hit the limit and fall back to eager. "
                             "Make the input stable or dynamic (mark_dynamic, dynamic=True).", f.key))
    return out


def _breaks(s: CompileSummary, fullgraph: set[str]) -> list[Alert]:
    out = []
    for f in s.frames:
        if not f.graph_break_count:
            continue
        first = f.graph_breaks[0] if f.graph_breaks else None
        detail = f": {first.reason} at {first.at}" if first else ""
        if f.key in fullgraph:
            out.append(Alert("fullgraph_break", "error", f"{f.function} is compiled with fullgraph=True and breaks{detail}",
                             "fullgraph makes every graph break an error: remove the break (the reason says which call) or drop fullgraph.", f.key))
        else:
            out.append(Alert("graph_breaks", "info", f"{f.function} ({f.where}) has {f.graph_break_count} graph break(s){detail}",
                             "Each break splits the graph and costs a compile and a Python round trip; the reason's hint says how to "
                             "keep the code in the graph. fullgraph=True turns breaks into errors.", f.key))
    return out


def _failures(s: CompileSummary) -> list[Alert]:
    out = []
    for f in s.frames:
        for fail in f.failures:
            where = f" at {fail.user_frame}" if fail.user_frame else ""
            if fail.fail_type == "BackendCompilerFailed":
                advice = ("The backend raised (its error is in the reason). Bisect with backend='eager', then 'aot_eager', "
                          "then inductor to find the stage; a stale inductor cache can do this too: clear TORCHINDUCTOR_CACHE_DIR.")
            elif fail.fail_type in ("Unsupported", "UserError"):
                advice = ("Dynamo could not trace this code. Under fullgraph=True a graph break is such an error: remove the break "
                          "(see the reason's hint) or drop fullgraph.")
            else:
                advice = "Read the reason and the dynamo_error traceback; torch._dynamo.config.suppress_errors=True falls back to eager."
            out.append(Alert("compile_failure", "error", f"{f.function} ({fail.compile_id}) failed: {fail.fail_type}: {fail.reason.splitlines()[0] if fail.reason else ''}{where}",
                             advice, f.key))
    return out


def overlaps(spans: list[CompileSpan]) -> list[tuple[CompileSpan, CompileSpan]]:
    """Pairs of compiles of one process on different threads whose time spans overlap."""
    found = []
    done = sorted((sp for sp in spans if sp.end is not None), key=lambda sp: sp.start)
    for i, a in enumerate(done):
        for b in done[i + 1:]:
            if b.start > (a.end or a.start):
                break
            if a.source == b.source and a.thread != b.thread:
                found.append((a, b))
    return found


def _threads(spans: list[CompileSpan]) -> list[Alert]:
    pairs = overlaps(spans)
    if pairs:
        a, b = pairs[0]
        return [Alert("thread_race", "error",
                      f"compiles on {len({sp.thread for p in pairs for sp in p})} threads overlap in time "
                      f"({a.compile_id} on {a.thread}, {b.compile_id} on {b.thread})", RACE_ADVICE, a.frame)]
    threaded = [sp for sp in spans if ":thread:" in sp.thread]
    if not threaded:
        return []
    targets = sorted({sp.thread.split(":thread:", 1)[1] for sp in threaded})
    return [Alert("threaded_compile", "warning",
                  f"{len(threaded)} compile(s) ran on worker threads (target {', '.join(targets)}): "
                  f"{', '.join(sp.compile_id for sp in threaded[:6])}", RACE_ADVICE, threaded[0].frame)]


def alerts_for(s: CompileSummary, spans: list[CompileSpan], fullgraph: set[str], limit: int) -> list[Alert]:
    """Every alert of ``s``: errors first, then warnings, then information."""
    alerts = _storm(s, limit) + _failures(s) + _breaks(s, fullgraph) + _threads(spans)
    if s.cache_state == "cold":
        alerts.append(Alert("cache_cold", "info", f"compile caches cold: {s.cache_misses} misses, no hit",
                            "Expected on a first run or after clearing the caches; if every run is cold, the cache directory "
                            "(TORCHINDUCTOR_CACHE_DIR) is not kept between runs or the code/config changes each time."))
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(alerts, key=lambda a: order.get(a.severity, 3))
