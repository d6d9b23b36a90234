"""From trace events to a :class:`~cockpit.core.compile.model.CompileSummary`.

:class:`SummaryBuilder` takes :class:`~cockpit.core.compile.trace.TraceEvent` s one at a time (from
the raw trace or the filter's stream: both give the same summary) and builds the summary on
demand, so a follower can show it while the job compiles.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from cockpit.core.compile.alerts import alerts_for
from cockpit.core.compile.model import KEEP, CompileSpan, CompileSummary, Failure, FrameRow, GraphBreak, clip
from cockpit.core.compile.trace import TraceEvent, TraceParser

COMPILE_ID = re.compile(r"(\d+)/(\d+)")
CACHE_EVENT = re.compile(r"^(?P<kind>.+)_cache_(?P<outcome>hit|miss|bypass)$")
LIMIT_HIT = re.compile(r"recompile[ _]limit|cache[ _]size[ _]limit", re.IGNORECASE)
LIMIT_IN_TEXT = re.compile(r"currently set to (\d+)")
BREAK_AT = re.compile(r"Graph break in user code at (\S+)")
DEFAULT_RECOMPILE_LIMIT = 8
THREADING_FRAMES = frozenset({"_bootstrap", "_bootstrap_inner", "run"})


def thread_of(event: TraceEvent) -> str:
    """A compile's thread as the trace shows it: the glog number (a thread id in torch 2.2-2.4, the
    process id after) and whether ``dynamo_start``'s stack begins in ``threading``'s bootstrap
    (then the thread's target function names it)."""
    stack = event.data.get("stack")
    context = "main"
    if isinstance(stack, list) and stack and isinstance(stack[0], dict) and stack[0].get("name") == "_bootstrap":
        target = next((f.get("name") for f in stack if isinstance(f, dict) and f.get("name") not in THREADING_FRAMES
                       and not str(f.get("filename", "")).endswith("threading.py")), None)
        context = f"thread:{target or '?'}"
    return f"{event.ident}:{context}"


def in_torch(path: str) -> bool:
    """A file of torch's own package (``…/site-packages/torch/_dynamo/external_utils.py``)."""
    return "/torch/" in path.replace("\\", "/") and "/site-packages/" in path or path.startswith("<frozen")


def user_site(stack: object) -> tuple[str, str, int] | None:
    """The innermost frame of a ``dynamo_start`` stack outside torch's package: (function, file,
    line) of the job's own call.  torch 2.11 compiles a module through a wrapper of its own
    (``inner`` in ``torch/_dynamo/external_utils.py``): that names no line of the job."""
    if not isinstance(stack, list):
        return None
    for frame in reversed(stack):
        if isinstance(frame, dict) and isinstance(frame.get("filename"), str) and not in_torch(frame["filename"]):
            line = _int(frame.get("line")) or 0
            return str(frame.get("name") or "?"), frame["filename"], line
    return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def graph_break_of(text: str, compile_id: str) -> GraphBreak:
    """The place and the short reason of a ``dynamo_graph_break_reason`` payload."""
    lines = [ln.strip() for ln in text.splitlines()]
    m = BREAK_AT.search(text)
    reason = ""
    for i, ln in enumerate(lines):
        if ln.startswith("Graph Break Reason:"):
            rest = [x for x in lines[i + 1:] if x]
            head = ln.split(":", 1)[1].strip()
            reason = rest[0] if rest and head.startswith("Encountered graph break") else head
            break
    return GraphBreak(at=m.group(1) if m else "", reason=clip(reason or next((x for x in lines if x), "")), compile_id=compile_id)


def reasons_of(payload: str) -> list[str]:
    """``recompile_reasons``: a JSON list of strings (one per guard that failed), or plain text."""
    try:
        value = json.loads(payload)
    except ValueError:
        value = None
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str):
        return [value]
    return [ln for ln in payload.splitlines() if ln.strip()]


def limit_of(metrics: dict[str, Any]) -> int | None:
    """The recompile limit a ``compilation_metrics`` shows (the filter's ``dynamo_config_limits``
    or torch's ``dynamo_config`` text; ``recompile_limit`` in new torch, ``cache_size_limit`` in old)."""
    limits = metrics.get("dynamo_config_limits")
    if not isinstance(limits, dict) and isinstance(metrics.get("dynamo_config"), str):
        try:
            limits = json.loads(metrics["dynamo_config"])
        except ValueError:
            limits = None
    if isinstance(limits, dict):
        for key in ("recompile_limit", "cache_size_limit"):
            if _int(limits.get(key)) is not None:
                return int(limits[key])
    m = LIMIT_IN_TEXT.search(str(metrics.get("fail_reason") or ""))
    return int(m.group(1)) if m else None


class SummaryBuilder:
    """Add events; :meth:`summary` gives the summary so far."""

    def __init__(self) -> None:
        self.frames: dict[tuple[str, int], FrameRow] = {}
        self.spans: dict[tuple[str, str], CompileSpan] = {}
        self.hits = 0
        self.misses = 0
        self.limit: int | None = None
        self.torch_version = ""
        #: per (source, frame id), the job's own call of the compiled code (:func:`user_site`)
        self.sites: dict[tuple[str, int], tuple[str, str, int]] = {}
        self.fullgraph: set[tuple[str, int]] = set()
        self.events = 0
        self.malformed = 0

    def add_all(self, events: Iterable[TraceEvent]) -> SummaryBuilder:
        for event in events:
            self.add(event)
        return self

    def _row(self, event: TraceEvent, frame_id: int) -> FrameRow:
        key = (event.source, frame_id)
        row = self.frames.get(key)
        if row is None:
            row = self.frames[key] = FrameRow(frame_id=frame_id, rank=event.rank)
        return row

    def add(self, event: TraceEvent) -> None:
        self.events += 1
        if event.kind == "dynamo_start":
            self._start(event)
        elif event.kind == "compilation_metrics":
            self._metrics(event)
        elif event.kind == "artifact":
            self._artifact(event)

    def _start(self, event: TraceEvent) -> None:
        cid, fid = event.compile_id, event.frame_id
        if cid is None or fid is None or (event.source, cid) in self.spans:
            return
        row = self._row(event, fid)
        site = user_site(event.data.get("stack"))
        if site is not None:
            self.sites[(event.source, fid)] = site
        span = CompileSpan(event.source, row.key, cid, thread_of(event), event.t)
        self.spans[(event.source, cid)] = span
        if span.thread not in row.threads:
            row.threads.append(span.thread)

    def _metrics(self, event: TraceEvent) -> None:
        m = event.data
        cid = str(m.get("compile_id") or event.compile_id or "")
        found = COMPILE_ID.search(cid)
        if found is None:
            return
        row = self._row(event, int(found.group(1)))
        self.limit = limit_of(m) or self.limit
        if not self.torch_version and isinstance(m.get("pytorch_version"), str):
            # torch 2.11 writes no ``torch_version`` artifact; every compile's metrics name it
            self.torch_version = m["pytorch_version"][:64]
        if m.get("fullgraph") is True:
            self.fullgraph.add((event.source, row.frame_id))
        if isinstance(m.get("co_name"), str):
            row.function, row.file, row.line = m["co_name"], str(m.get("co_filename") or ""), _int(m.get("co_firstlineno")) or 0
            site = self.sites.get((event.source, row.frame_id))
            if in_torch(row.file) and site is not None:  # torch's own wrapper (a compiled module): where the job calls it
                row.function = f"{row.function} (torch.compile's wrapper, called by {site[0]})"
                row.file, row.line = site[1], site[2]
        span = self.spans.get((event.source, found.group(0)))
        if span is not None:
            span.end = event.t
        fail_type, fail_reason = m.get("fail_type"), str(m.get("fail_reason") or "")
        if fail_type and LIMIT_HIT.search(fail_reason):
            row.limit_hit = True
            return
        row.compiles += 1
        seconds = _float(m.get("entire_frame_compile_time_s"))
        if seconds is not None:
            row.last_compile_s = seconds
            row.total_compile_s = round(row.total_compile_s + seconds, 6)
        row.guard_count = _int(m.get("guard_count")) if m.get("guard_count") is not None else row.guard_count
        if fail_type:
            user = m.get("fail_user_frame_filename")
            where = f"{user}:{m.get('fail_user_frame_lineno')}" if user else ""
            if len(row.failures) < KEEP:
                row.failures.append(Failure(found.group(0), str(fail_type), clip(fail_reason), where))
        restarts = m.get("restart_reasons")
        if isinstance(restarts, list) and restarts:
            row.restarts += len(restarts)
            row.restart_reasons = (row.restart_reasons + [clip(r, 200) for r in restarts])[-KEEP:]

    def _artifact(self, event: TraceEvent) -> None:
        name = event.name
        if name == "torch_version":
            try:
                info = json.loads(event.payload)
            except ValueError:
                info = None
            if isinstance(info, dict):
                self.torch_version = str(info.get("pytorch_version", ""))
            return
        fid = event.frame_id
        if fid is None:
            return
        cache = CACHE_EVENT.match(name)
        if cache:
            row = self._row(event, fid)
            counts = row.cache.setdefault(cache.group("kind"), {"hit": 0, "miss": 0, "bypass": 0})
            counts[cache.group("outcome")] += 1
            self.hits += cache.group("outcome") == "hit"
            self.misses += cache.group("outcome") == "miss"
        elif name == "recompile_reasons":
            row = self._row(event, fid)
            reasons = [clip(r, 300) for r in reasons_of(event.payload)]
            row.recompile_reasons = (row.recompile_reasons + reasons[:1])[-KEEP:]  # the newest guard failure first
        elif name == "dynamo_graph_break_reason":
            row = self._row(event, fid)
            row.graph_break_count += 1
            if len(row.graph_breaks) < KEEP:
                row.graph_breaks.append(graph_break_of(event.payload, event.compile_id or ""))

    def summary(self) -> CompileSummary:
        """The summary of what was added so far."""
        frames = sorted(self.frames.values(), key=lambda r: (-1 if r.rank is None else r.rank, r.frame_id))
        state = "none"
        if self.hits or self.misses:
            state = "warm" if not self.misses else "cold" if not self.hits else "mixed"
        s = CompileSummary(frames=frames, cache_state=state, cache_hits=self.hits, cache_misses=self.misses,
                           recompile_limit=self.limit, torch_version=self.torch_version,
                           ranks=sorted({f.rank for f in frames if f.rank is not None}), events=self.events, malformed=self.malformed)
        fullgraph = {self.frames[k].key for k in self.fullgraph if k in self.frames}
        s.alerts = alerts_for(s, list(self.spans.values()), fullgraph, self.limit or DEFAULT_RECOMPILE_LIMIT)
        return s


def summarize(events: Iterable[TraceEvent], malformed: int = 0) -> CompileSummary:
    """The summary of a finished list of events (``malformed``: the parser's count, kept for display)."""
    builder = SummaryBuilder().add_all(events)
    builder.malformed = malformed
    return builder.summary()


class CompileTracker:
    """A parser and a builder together: feed trace bytes (raw or filtered) as they come, read the
    summary whenever (the malformed-line count included)."""

    def __init__(self) -> None:
        self.parser = TraceParser()
        self.builder = SummaryBuilder()

    def feed(self, data: bytes | str, source: str = "") -> int:
        """Parse ``data`` of ``source``; returns how many events it completed."""
        events = self.parser.feed(data, source)
        self.builder.add_all(events)
        return len(events)

    def close(self) -> None:
        """End of every input: the last lines and pending payloads count too."""
        self.builder.add_all(self.parser.close())

    def summary(self) -> CompileSummary:
        self.builder.malformed = self.parser.malformed
        return self.builder.summary()
