"""torch.compile's summary as the rest of cockpit says it: one markdown line for ``history``, the
verdict's words for a job still compiling or a failed compile, and the alerts as findings for
``cockpit status`` (docs/compile.md).  Plain functions of a :class:`~cockpit.core.compile.CompileSummary`."""

from __future__ import annotations

import os
from typing import Any

from .compile import CompileSummary
from .compile.model import Failure, FrameRow
from .layers import Finding, Layer, Severity, Status

__all__ = ["markdown_line", "compiling_words", "failure_words", "alert_findings", "summary_of", "compare_cell", "unsuppressed_failures", "cache_stage_words"]

_ALERT_WORDS = {"recompile_limit": "recompile limit hit", "thread_race": "compiles raced on threads", "fullgraph_break": "graph break under fullgraph"}
_SEVERITY = {"error": Severity.ERROR, "warning": Severity.WARNING, "info": Severity.INFO}


def summary_of(data: Any) -> CompileSummary | None:
    """A journal ``compile`` dict (``AttemptRecord.compile``) read back, or None."""
    return CompileSummary.from_dict(data) if isinstance(data, dict) else None


def _n(count: int | float, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _short(where: str) -> str:
    path, _, line = where.rpartition(":")
    return f"{os.path.basename(path)}:{line}" if path else where


def _top_reason(s: CompileSummary) -> str:
    """The frame with the most recompiles and its newest reason: ``forward: size of L['x'] changed``."""
    frames = [f for f in s.frames if f.recompiles]
    if not frames:
        return ""
    f = max(frames, key=lambda r: r.recompiles)
    reason = f.recompile_reasons[-1] if f.recompile_reasons else ""
    reason = reason.split(": ", 1)[1] if reason[:1].isdigit() and ": " in reason else reason
    return f"{f.function}: {reason[:80]}" if reason else f.function


def markdown_line(s: CompileSummary) -> str:
    """``compiled 3 frames, 8 recompiles (forward: size of L['x'] changed), 1 graph break, 41 s compiling; cache cold``."""
    t = s.totals
    parts = [f"compiled {_n(int(t['frames']), 'frame')}"]
    rec = int(t["recompiles"])
    if rec:
        why = _top_reason(s)
        parts.append(_n(rec, "recompile") + (f" ({why})" if why else ""))
    if t["graph_breaks"]:
        parts.append(_n(int(t["graph_breaks"]), "graph break"))
    if t["failures"]:
        parts.append(_n(int(t["failures"]), "failed compile"))
    parts.append(f"{float(t['compile_s']):.0f} s compiling")
    line = ", ".join(parts)
    if s.cache_state != "none":
        line += f"; cache {s.cache_state}" + (f" ({s.cache_hit_ratio:.0%} hits)" if s.cache_state == "mixed" and s.cache_hit_ratio is not None else "")
    errors = [_ALERT_WORDS.get(a.kind, a.kind.replace("_", " ")) for a in s.alerts if a.severity == "error" and a.kind != "compile_failure"]
    return line + (f"; {', '.join(dict.fromkeys(errors))}" if errors else "")


def compare_cell(data: Any) -> str:
    """The compile row's cell of ``cockpit compare``: frames/recompiles/breaks, seconds, cache."""
    s = summary_of(data)
    if s is None:
        return "—"
    t = s.totals
    return (f"{t['frames']} fr, {t['recompiles']} recomp, {t['graph_breaks']} breaks, {float(t['compile_s']):.0f} s"
            + (f", cache {s.cache_state}" if s.cache_state != "none" else ""))


def compiling_words(function: str, where: str, seconds: float) -> str:
    """``still compiling `f` (model.py:42) for 95 s``."""
    return f"still compiling `{function}`" + (f" ({_short(where)})" if where else "") + f" for {seconds:.0f} s"


def unsuppressed_failures(s: CompileSummary) -> list[tuple[FrameRow, Failure]]:
    """Failed compiles that raised into the job: the frame never compiled after its failure (with
    ``suppress_errors`` dynamo falls back to eager and compiles the frame again later)."""
    out: list[tuple[FrameRow, Failure]] = []
    for f in s.frames:
        if f.failures and f.compiles <= len(f.failures):
            out.extend((f, x) for x in f.failures)
    return out


def failure_words(frame: FrameRow, failure: Failure) -> str:
    """``torch.compile failed on `f` (model.py:13): BackendCompilerFailed: backend='x' raised: …``."""
    where = f" ({_short(frame.where)})" if frame.where else ""
    reason = " ".join(failure.reason.split())[:240]
    return f"torch.compile failed on `{frame.function or '?'}`{where}: {failure.fail_type}: {reason}"


def alert_findings(s: CompileSummary, attempt: int | None = None) -> list[Finding]:
    """Each alert of the summary as a finding with its advice (layer app)."""
    out = []
    for a in s.alerts:
        subject: dict[str, Any] = {"alert": a.kind, "frame": a.frame}
        if attempt is not None:
            subject["attempt"] = attempt
        out.append(Finding(Layer.APP, f"compile-{a.kind.replace('_', '-')}", f"torch.compile: {a.message}", a.advice,
                           _SEVERITY.get(a.severity, Severity.WARNING), subject))
    return out


def cache_stage_words(s: CompileSummary | None, *, cleared: bool, cache_dir: str = "", source: str = "") -> tuple[Status, Layer, str, str]:
    """The attempt's ``compile cache`` stage: (status, layer, detail, advice).  After clear-cache
    every graph must be a miss (``cold ✔``); a hit means the cache survived the clear (failed, layer
    container).  Without a clear the hits are information.  No cache events: skipped, with why.
    ``cache_dir``/``source``: the job's TORCHINDUCTOR_CACHE_DIR and where it was found, for the advice."""
    if s is None:
        return Status.SKIPPED, Layer.APP, "no torch.compile trace for this job", ""
    total = s.cache_hits + s.cache_misses
    if total == 0:
        return Status.SKIPPED, Layer.APP, "no compiled graphs in the trace yet (no cache lookups)", ""
    ratio = f"{s.cache_hits}/{total} hits"
    if not cleared:
        state = "warm" if s.cache_hits == total else "cold" if not s.cache_hits else "mixed"
        return Status.OK, Layer.APP, f"{state}: {ratio} (no clear-cache this attempt)", ""
    if not s.cache_hits:
        return Status.OK, Layer.APP, f"cold ✔: {_n(total, 'graph')}, every one a cache miss after clear-cache", ""
    state = "warm" if s.cache_hits == total else "mixed"
    detail = f"{state}: {ratio} after clear-cache: the cache cockpit cleared is not the one the job uses"
    if cache_dir:
        advice = (f"the job's TORCHINDUCTOR_CACHE_DIR is {cache_dir} ({source or 'its environment'}): add it to [cache] paths "
                  "or set [cache] discover = true")
    else:
        advice = ("the job's environment sets no TORCHINDUCTOR_CACHE_DIR, so inductor uses /tmp/torchinductor_$USER of the user "
                  "it runs as: set TORCHINDUCTOR_CACHE_DIR in [job] env and list it in [cache] paths (or set [cache] discover = true)")
    return Status.FAIL, Layer.CONTAINER, detail, advice
