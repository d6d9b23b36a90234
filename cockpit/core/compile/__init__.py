"""torch.compile's own events, read from the job's structured trace (``TORCH_TRACE``).

- :mod:`.trace`: an incremental parser of the trace text (several files, cut anywhere),
- :mod:`.filter`: the target-side filter (a stdlib script) that sends only what cockpit reads,
- :mod:`.summary`, :mod:`.model`, :mod:`.alerts`: the per-frame summary, its journal form and alerts.

See docs/compile.md.  No torch import anywhere here.
"""

from cockpit.core.compile.filter import (
    CAUGHT_UP,
    FILTER_SCRIPT,
    TRACE_GLOB,
    filter_file,
    filter_text,
    once_if_traced,
    script_command,
    shell_command,
    when_traced,
)
from cockpit.core.compile.model import Alert, CompileSummary, Failure, FrameRow, GraphBreak
from cockpit.core.compile.summary import CompileTracker, SummaryBuilder, summarize
from cockpit.core.compile.trace import TraceEvent, TraceParser, parse_text, rank_of

__all__ = [
    "FILTER_SCRIPT", "Alert", "CompileSummary", "CompileTracker", "Failure", "FrameRow", "GraphBreak", "SummaryBuilder",
    "CAUGHT_UP", "TraceEvent", "TraceParser", "filter_file", "filter_text", "parse_text", "rank_of", "once_if_traced", "script_command", "shell_command", "TRACE_GLOB", "summarize", "when_traced",
]
