"""What cockpit keeps of a job's torch.compile activity: :class:`CompileSummary`, its frames
(:class:`FrameRow`) and :class:`Alert` s, with a JSON-safe, stable ``to_dict``/``from_dict`` for
the journal.  Built from trace events by :mod:`cockpit.core.compile.summary`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

SCHEMA = 1
#: how many recompile reasons / graph breaks / failures a frame keeps (the counts stay exact)
KEEP = 8
TEXT_CAP = 500


def clip(text: object, cap: int = TEXT_CAP) -> str:
    """``text`` as a string of at most ``cap`` characters (an ellipsis marks a cut)."""
    s = "" if text is None else str(text)
    return s if len(s) <= cap else s[: cap - 1] + "…"


@dataclass
class GraphBreak:
    """One graph break: where in the user's code, and dynamo's short reason."""

    at: str
    reason: str
    compile_id: str = ""


@dataclass
class Failure:
    """A compile that failed: torch's ``fail_type`` and ``fail_reason``, and the user's line."""

    compile_id: str
    fail_type: str
    reason: str
    user_frame: str = ""


@dataclass
class FrameRow:
    """One compiled frame (a code object dynamo compiled) of one rank."""

    frame_id: int
    rank: int | None = None
    function: str = ""
    file: str = ""
    line: int = 0
    compiles: int = 0
    last_compile_s: float | None = None
    total_compile_s: float = 0.0
    cache: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> {"hit": n, "miss": n, "bypass": n}
    graph_break_count: int = 0
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    guard_count: int | None = None
    recompile_reasons: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    restarts: int = 0
    restart_reasons: list[str] = field(default_factory=list)
    limit_hit: bool = False
    threads: list[str] = field(default_factory=list)

    @property
    def recompiles(self) -> int:
        return max(0, self.compiles - 1)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""

    @property
    def key(self) -> str:
        return f"{self.frame_id}" if self.rank is None else f"rank{self.rank}/{self.frame_id}"


@dataclass
class CompileSpan:
    """One compile's time span (glog seconds) and the thread it ran on, for the race check."""

    source: str
    frame: str
    compile_id: str
    thread: str
    start: float
    end: float | None = None


@dataclass
class Alert:
    """Something to act on: ``kind`` (``recompile_limit``, ``recompile_storm``, ``fullgraph_break``,
    ``graph_breaks``, ``compile_failure``, ``thread_race``, ``threaded_compile``, ``cache_cold``),
    ``severity`` (``error``, ``warning``, ``info``), the frame it is about (its key) and advice."""

    kind: str
    severity: str
    message: str
    advice: str
    frame: str = ""


@dataclass
class CompileSummary:
    """All frames, the totals, the cache state and the alerts of one job's trace."""

    frames: list[FrameRow] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    cache_state: str = "none"  # none | cold | warm | mixed
    cache_hits: int = 0
    cache_misses: int = 0
    recompile_limit: int | None = None
    torch_version: str = ""
    ranks: list[int] = field(default_factory=list)
    events: int = 0
    malformed: int = 0

    @property
    def totals(self) -> dict[str, float | int]:
        return {
            "frames": len(self.frames),
            "compiles": sum(f.compiles for f in self.frames),
            "recompiles": sum(f.recompiles for f in self.frames),
            "graph_breaks": sum(f.graph_break_count for f in self.frames),
            "failures": sum(len(f.failures) for f in self.frames),
            "compile_s": round(sum(f.total_compile_s for f in self.frames), 6),
        }

    @property
    def cache_hit_ratio(self) -> float | None:
        total = self.cache_hits + self.cache_misses
        return None if total == 0 else self.cache_hits / total

    def frame(self, function: str, rank: int | None = None) -> FrameRow | None:
        """The first frame compiled for ``function`` (and ``rank``, when given)."""
        return next((f for f in self.frames if f.function == function and (rank is None or f.rank == rank)), None)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict with stable keys (``totals`` is derived, written for readers)."""
        out = asdict(self)
        out["schema"] = SCHEMA
        out["totals"] = self.totals
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompileSummary:
        """Read back :meth:`to_dict`'s output (unknown keys ignored, missing ones defaulted)."""
        s = cls(**_known(cls, data, skip={"frames", "alerts"}))
        s.frames = [_frame(f) for f in data.get("frames", []) if isinstance(f, dict)]
        s.alerts = [Alert(**_known(Alert, a)) for a in data.get("alerts", []) if isinstance(a, dict)]
        return s


def _known(cls: type, data: dict[str, Any], skip: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    names = {f.name for f in fields(cls)} - set(skip)
    return {k: v for k, v in data.items() if k in names}


def _frame(data: dict[str, Any]) -> FrameRow:
    row = FrameRow(**_known(FrameRow, data, skip={"graph_breaks", "failures"}))
    row.graph_breaks = [GraphBreak(**_known(GraphBreak, g)) for g in data.get("graph_breaks", []) if isinstance(g, dict)]
    row.failures = [Failure(**_known(Failure, f)) for f in data.get("failures", []) if isinstance(f, dict)]
    return row
