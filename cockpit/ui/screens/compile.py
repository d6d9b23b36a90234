"""torch.compile's account of the job: one row per compiled frame, the selected frame's recompile
reasons, graph breaks and failures, the alerts with their advice, and the totals (docs/compile.md).

Opened with a :class:`~cockpit.core.compile.CompileSummary` (the engine's live one, or the journal's
``compile`` of the selected attempt); :meth:`CompileScreen.show` replaces it while the screen is
open (each :class:`~cockpit.core.events.CompileUpdated`), keeping the selected frame.  Every text
from the trace (function and file names, reasons) is job data: shown as plain ``Text``, never markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from ...core.compile import CompileSummary, FrameRow
from ...core.compile_report import markdown_line
from ...core.text import sanitize
from .backdrop import BackdropModal

__all__ = ["CompileScreen", "frame_cells", "frame_detail", "alerts_text"]

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
COLUMNS = ("frame", "function", "where", "compiles", "recompiles", "breaks", "last s", "total s", "cache", "state")


def _cache(f: FrameRow) -> str:
    hit = sum(c.get("hit", 0) for c in f.cache.values())
    miss = sum(c.get("miss", 0) for c in f.cache.values())
    return "—" if not (hit or miss) else f"{hit} hit / {miss} miss"


def _state(f: FrameRow) -> str:
    if f.failures:
        return "failed"
    if f.limit_hit:
        return "limit hit"
    return "ok" if f.compiles else "compiling"


def frame_cells(f: FrameRow) -> tuple[str, ...]:
    """One frame's row: key, function, file:line, compiles, recompiles, breaks, seconds, cache, state."""
    last = "—" if f.last_compile_s is None else f"{f.last_compile_s:.2f}"
    return (f.key, sanitize(f.function or "?", 60), sanitize(f.where, 80), str(f.compiles), str(f.recompiles), str(f.graph_break_count),
            last, f"{f.total_compile_s:.2f}", _cache(f), _state(f))


def frame_detail(f: FrameRow) -> Text:
    """The selected frame: its recompile reasons (newest last), graph breaks, failures and restarts."""
    t = Text()
    t.append(f"{sanitize(f.function or '?', 80)}", style="bold")
    t.append(f"  {sanitize(f.where, 120)}  guards: {f.guard_count if f.guard_count is not None else '—'}"
             + (f"  threads: {', '.join(sanitize(x, 40) for x in f.threads)}" if f.threads else "") + "\n")
    sections = [("recompile reasons", f.recompile_reasons),
                ("graph breaks", [f"{b.at}: {b.reason}" if b.at else b.reason for b in f.graph_breaks]),
                ("failures", [f"{x.compile_id} {x.fail_type}: {x.reason}" + (f" (at {x.user_frame})" if x.user_frame else "") for x in f.failures]),
                ("restarts", f.restart_reasons)]
    for title, items in sections:
        if items:
            t.append(f"{title}:\n", style="underline")
            for item in items:
                t.append(f"  • {sanitize(item, 400)}\n")
    if not any(items for _, items in sections):
        t.append("no recompile, graph break or failure\n", style="dim")
    return t


def alerts_text(s: CompileSummary) -> Text:
    """Each alert in its severity's colour, with its advice under it."""
    t = Text()
    for a in s.alerts:
        t.append(f"{a.severity}: ", style=SEVERITY_STYLE.get(a.severity, ""))
        t.append(sanitize(a.message, 400) + "\n", style=SEVERITY_STYLE.get(a.severity, ""))
        if a.advice:
            t.append(f"  → {sanitize(a.advice, 600)}\n", style="dim")
    return t if s.alerts else Text("no alerts", style="dim")


class CompileScreen(BackdropModal[None]):
    """The summary of one attempt's compiles (see the module doc)."""

    BINDINGS = [Binding("escape,q,c", "close", "Close", id="compile-close")]
    DEFAULT_CSS = """
    CompileScreen { align: center middle; }
    CompileScreen > #compile-box { width: 95%; height: 90%; border: round $accent; background: $surface; padding: 0 1; }
    CompileScreen #compile-frames { height: 1fr; min-height: 4; }
    CompileScreen #compile-detail-scroll { height: 1fr; }
    CompileScreen #compile-alerts-scroll { height: auto; max-height: 10; }
    """

    def __init__(self, summary: CompileSummary, attempt: int | None = None, *, final: bool = False) -> None:
        """``final``: the attempt's job is over and ``summary`` is its last (no "live" in the title)."""
        super().__init__()
        self.summary = summary
        self.attempt = attempt
        self.final = final

    def compose(self) -> ComposeResult:
        with Vertical(id="compile-box"):
            yield Static(id="compile-title")
            yield Static(id="compile-totals")
            yield DataTable(id="compile-frames", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="compile-detail-scroll"):
                yield Static(id="compile-detail")
            with VerticalScroll(id="compile-alerts-scroll"):
                yield Static(id="compile-alerts")
            yield Static("↑↓: frame   esc: close", classes="modal-dim")

    def on_mount(self) -> None:
        self.query_one("#compile-frames", DataTable).add_columns(*COLUMNS)
        self.show(self.summary, self.final)

    def show(self, summary: CompileSummary, final: bool = False) -> None:
        """Show ``summary`` (a newer one of the same attempt), keeping the selected frame."""
        self.summary, self.final = summary, final
        table = self.query_one("#compile-frames", DataTable)
        keep = self.selected.key if self.selected is not None else None
        table.clear()
        for f in summary.frames:
            table.add_row(*frame_cells(f), key=f.key)
        if keep is not None:
            row = next((i for i, f in enumerate(summary.frames) if f.key == keep), 0)
            table.move_cursor(row=row)
        title = "torch.compile" + (f" — attempt {self.attempt}" if self.attempt is not None else "")
        title += f"  (torch {sanitize(summary.torch_version, 40)})" if summary.torch_version else ""
        title += "" if final else "  · live"
        self.query_one("#compile-title", Static).update(Text(title, style="bold"))
        totals = markdown_line(summary) if summary.frames else "no compile yet"
        self.query_one("#compile-totals", Static).update(Text(totals))
        self.query_one("#compile-alerts", Static).update(alerts_text(summary))
        self._detail()

    @property
    def selected(self) -> FrameRow | None:
        frames = self.summary.frames
        if not frames or not self.is_mounted:
            return None
        row = self.query_one("#compile-frames", DataTable).cursor_row
        return frames[row] if 0 <= row < len(frames) else frames[0]

    def _detail(self) -> None:
        f = self.selected
        self.query_one("#compile-detail", Static).update(frame_detail(f) if f is not None else Text("no frame compiled yet", style="dim"))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    def action_close(self) -> None:
        self.dismiss(None)
