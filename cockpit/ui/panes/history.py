"""The fix-attempt history: attempt, outcome, layer, the job's fate since, time, hypothesis, code, first error.

Newest first, updated by row key (the attempt id).  Enter on a row (or ``v``) opens the full
verdict.  ``failed`` and ``untested`` differ by glyph, word and colour (``✘ FAILED app`` vs
``⊘ UNTESTED ssh``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist

from ...core.probes.text import fmt_secs
from ..format import code_version_text, first_error_text, fmt_clock, is_stale, one_line, outcome_text
from .base import Pane
from .table import sync_rows

if TYPE_CHECKING:
    from ...core.journal import AttemptRecord

__all__ = ["HistoryPane"]

#: outcome and layer come first: they are what a glance at the history is for
COLUMNS = (("id", "#"), ("outcome", "OUTCOME"), ("layer", "LAYER"), ("fate", "THEN"), ("time", "TIME"), ("note", "HYPOTHESIS"),
           ("code", "CODE"), ("error", "FIRST ERROR"))

#: the job's fate after the verdict, short: a glyph and a word (colour is never the only signal)
FATE_GLYPH = {"running": "▶", "pending": "…", "stalled": "‖", "finished": "✔", "died": "✘", "diverged": "∞", "stopped": "■", "vanished": "?"}


class HistoryPane(Pane):
    pane_id = "history"
    pane_title = "attempts [4]"

    class AttemptChosen(Message):
        def __init__(self, attempt: int) -> None:
            super().__init__()
            self.attempt = attempt

    def __init__(self, clock: Callable[[], float], interval: float, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(**kw)
        self.clock, self.interval = clock, interval
        self.records: list[AttemptRecord] = []
        self.collected_at: float | None = None

    def compose(self) -> ComposeResult:
        table: DataTable[Any] = DataTable(id="history-table", cursor_type="row")  # Any: DataTable cells (str and Text)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        yield table

    @property
    def table(self) -> DataTable[Any]:  # Any: DataTable cells (str and Text)
        return self.query_one("#history-table", DataTable)

    def show(self, records: list[AttemptRecord], collected_at: float | None = None) -> None:
        self.records = list(records)
        self.collected_at = collected_at
        self.redraw()

    def tick(self) -> None:
        age = None if self.collected_at is None else self.clock() - self.collected_at
        self.set_freshness(age, is_stale(age, self.interval * 5), note=f"{len(self.records)} attempt{'' if len(self.records) == 1 else 's'}")

    def redraw(self) -> None:
        if not self.is_mounted:
            return
        now = self.clock()
        rows = []
        for r in reversed(self.records):
            o = r.outcome_name
            lay = r.layer_name or ""
            rows.append((str(r.attempt), [
                Text(str(r.attempt), style=self.cs("txt--title")),
                Text(outcome_text(o, None, short=True), style=self.outcome_style(o)),
                Text(lay or "—", style=self.layer_style(lay) if lay else self.cs("txt--dim")),
                self._fate_cell(r.fate),
                fmt_clock(r.started_at, now),
                one_line(r.note, 40) or "—",
                code_version_text(r.code_version),
                one_line(first_error_text(r.first_error), 80) or "—",
            ]))
        with self.app.batch_update():
            sync_rows(self.table, rows, key_column=0, stick_to_top=True)
        self.tick()

    def _fate_cell(self, fate: dict[str, Any] | None) -> Text:  # Any: the journal's JSON
        """``✘ died app 4m12s`` for a job that died after its verdict; ``—`` when nothing is known."""
        if not fate or not isinstance(fate.get("state"), str):
            return Text("—", style=self.cs("txt--dim"))
        state, layer = fate["state"], fate.get("layer") or ""
        after = fate.get("after_s")
        when = f" {fmt_secs(after)}" if isinstance(after, (int, float)) and state != "running" else ""
        text = f"{FATE_GLYPH.get(state, '·')} {state}" + (f" {layer}" if layer and state in ("died", "diverged", "vanished", "stalled") else "") + when
        style = self.layer_style(layer) if layer and state in ("died", "diverged", "vanished", "stalled") else self.cs("txt--dim")
        return Text(text, style=style)

    def selected(self) -> int | None:
        t = self.table
        if not t.row_count:
            return None
        try:
            key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
            return int(key) if key is not None else None
        except (CellDoesNotExist, ValueError):  # no row under the cursor, or a key that is not an attempt number
            return None

    def record(self, attempt: int) -> AttemptRecord | None:
        return next((r for r in self.records if r.attempt == attempt), None)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.AttemptChosen(int(event.row_key.value)))

    def retheme(self) -> None:
        self.redraw()
