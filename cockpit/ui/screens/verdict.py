"""One attempt's (or action's) full verdict: every stage with status, layer, detail and advice,
the failing stage's evidence (command, exit code, output tail) and the first error's traceback."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from ..copy import Copied, deliver, verdict_copy
from ..format import code_version_text, first_error_text, fmt_clock, one_line, outcome_text, status_glyph
from ..panes.base import Styled, layer_tag
from ..panes.verdict import stage_group
from ..shown import shown, shown_block
from .kept import KeptModal

if TYPE_CHECKING:
    from ...core.journal import AttemptRecord
    from ...core.layers import Stage, Verdict

__all__ = ["VerdictScreen", "VerdictBody"]


class VerdictBody(Styled, Static):
    def __init__(self, record: AttemptRecord | None = None, *, verdict: Verdict | None = None, action: str = "",
                 clock: Callable[[], float] | None = None, diff_text: str | None = None) -> None:
        super().__init__("", markup=False)
        self.record, self.verdict, self.action, self.clock = record, verdict, action, clock
        self.diff_text = diff_text

    def changes_text(self) -> str | None:
        """The record's change summary (``"2 files, +5 −1: train.py, drafter.py"``), None without a diff."""
        d = self.record.diff if self.record is not None else None
        if not d:
            return None
        from ...core.changes import summarise

        return summarise(d)

    def on_mount(self) -> None:
        self.update(self.build())

    def _stages(self) -> list[tuple[str, Stage]]:
        if self.record is not None:
            return [(s.action, s.stage) for s in self.record.stages]
        if self.verdict is not None:
            return [(self.action or self.verdict.action, s) for s in self.verdict.stages]
        return []

    def build(self) -> Group:
        parts: list[RenderableType] = []
        r = self.record
        now = self.clock() if self.clock else None
        if r is not None:
            o, lay = r.outcome_name, r.layer_name
            parts.append(Text(f" {outcome_text(o, lay)} ", style=self.outcome_style(o) + self.cs("txt--title")))
            info = Table.grid(padding=(0, 2))
            info.add_column(style=self.cs("txt--dim"), no_wrap=True)
            info.add_column()
            info.add_row("attempt", _data(f"#{r.attempt}  started {fmt_clock(r.started_at, now)}" + (f"  took {r.duration_s:.1f}s" if r.duration_s else "")))
            info.add_row("hypothesis", _data(r.note or "—"))
            info.add_row("code", _data(code_version_text(r.code_version)))
            changes = self.changes_text()
            if changes:
                info.add_row("changes", _data(changes))
            info.add_row("log", _data(r.log_path or "—"))
            if r.job:
                info.add_row("job", _data(", ".join(f"{k} {v}" for k, v in r.job.items() if k in ("pid", "pgid", "unit", "start_time") and v)))
            if r.caches is not None:
                info.add_row("caches", _data(", ".join(str(c.get("path", c)) if isinstance(c, dict) else str(c) for c in r.caches) or "none cleared"))
            if r.summary:
                info.add_row("summary", _data(r.summary))
            if r.interrupted_reason:
                info.add_row("interrupted", _data(r.interrupted_reason))
            if r.fate:
                from ...core.fate_record import fate_text

                info.add_row("then", _data(fate_text(r.fate)))  # job text is data, never markup
            parts.append(info)
        elif self.verdict is not None:
            v = self.verdict
            ok = v.failed_stage is None
            head = f"✔ {v.action} OK" if ok and not v.pending else (f"✘ {v.action} FAILED ({v.layer.value})" if v.layer else f"… {v.action} pending")
            parts.append(Text(f" {head} ", style=self.cs("txt--title")))
            parts.append(Text(shown(v.summary())))
        parts.append(Text(""))
        stages = Table(box=None, show_header=True, header_style=self.cs("txt--dim"), padding=(0, 1), expand=True)
        stages.add_column("", no_wrap=True)
        stages.add_column("layer", no_wrap=True)
        stages.add_column("stage", no_wrap=True)
        stages.add_column("detail", ratio=1)
        failing: Stage | None = None
        for action, s in self._stages():
            group, name = stage_group(action, s.name)
            detail = Text(one_line(s.detail))
            if s.advice and s.status.value == "fail":
                detail.append(f"\n→ {shown(s.advice)}", style=self.cs("txt--dim"))
            stages.add_row(Text(status_glyph(s.status), style=self.status_style(s.status)), layer_tag(self, s.layer),
                           Text(shown(f"{group} › {name}" if group != name else name)), detail)  # a str cell is markup: [/] crashed
            if s.status.value == "fail" and failing is None:
                failing = s
        parts.append(stages)
        if failing is not None and failing.evidence is not None:
            ev = failing.evidence
            parts.append(Text(""))
            parts.append(Text("evidence of the failing stage", style=self.cs("txt--title")))
            if ev.command:
                parts.append(Text(f"$ {shown_block(ev.command)}", style=self.cs("txt--key")))
            if ev.exit_code is not None:
                parts.append(Text(f"exit code {ev.exit_code}"))
            if ev.output:
                parts.append(Text(shown_block(ev.output.rstrip())[-3000:], style=self.cs("txt--dim")))
        if self.diff_text:
            lines = shown_block(self.diff_text.rstrip("\n")).splitlines()
            parts.append(Text(""))
            parts.append(Text("changes deployed by this attempt", style=self.cs("txt--title")))
            body = Text()
            for i, ln in enumerate(lines[:400]):
                style = self.cs("st--ok") if ln.startswith("+") and not ln.startswith("+++") else (
                    self.cs("st--fail") if ln.startswith("-") and not ln.startswith("---") else self.cs("txt--dim"))
                body.append(ln + ("\n" if i < min(len(lines), 400) - 1 else ""), style=style)
            if len(lines) > 400:
                body.append(f"\n… {len(lines) - 400} more lines in the journal's diffs/", style=self.cs("txt--dim"))
            parts.append(body)
        fe = r.first_error if r is not None else None
        if fe:
            parts.append(Text(""))
            t = Text("first error ", style=self.cs("txt--title"))
            if isinstance(fe, dict) and fe.get("layer"):
                t.append_text(layer_tag(self, fe["layer"]))
            t.append(f" {first_error_text(fe)}")
            parts.append(t)
            if isinstance(fe, dict):
                if fe.get("advice"):
                    parts.append(Text(f"→ {shown(fe['advice'])}", style=self.cs("txt--dim")))
                tb = fe.get("traceback") or []
                if tb:
                    parts.append(Text(shown_block("\n".join(str(x) for x in tb[-40:])), style=self.layer_style(fe.get("layer"))))
        return Group(*parts)


def _data(value: object) -> Text:
    """Job and journal text shown as it is: never parsed as markup (``[/]``, ``[rank0]:``)."""
    return value if isinstance(value, Text) else Text(shown(value))


class VerdictScreen(KeptModal[None]):
    """Kept and reopened (see ``kept.py``): one per app, its body rebuilt for what it shows now."""

    BINDINGS = [Binding("escape,q,v", "close", "Close", id="verdict-close"),
                Binding("y", "copy", "Copy", id="copy")]  # the same id as the main screen's copy: one keymap entry

    def __init__(self, record: AttemptRecord | None = None, *, verdict: Verdict | None = None, action: str = "",
                 clock: Callable[[], float] | None = None, diff_text: str | None = None) -> None:
        super().__init__()
        self.body = VerdictBody(record, verdict=verdict, action=action, clock=clock, diff_text=diff_text)

    def reopen(self, record: AttemptRecord | None = None, *, verdict: Verdict | None = None, action: str = "",
               clock: Callable[[], float] | None = None, diff_text: str | None = None) -> None:
        b = self.body
        b.record, b.verdict, b.action, b.clock, b.diff_text = record, verdict, action, clock, diff_text
        b.update(b.build())
        self.query_one(".modal-title", Static).update(self._title())
        self.query_one("#verdict-scroll", VerticalScroll).scroll_home(animate=False)

    def _title(self) -> str:
        rec = self.body.record
        return "verdict" if rec is None else f"attempt #{rec.attempt}"

    def compose(self) -> ComposeResult:
        with Vertical(id="verdict-box", classes="modal-box"):
            yield Static(self._title(), classes="modal-title")
            with VerticalScroll(id="verdict-scroll"):
                yield self.body
            yield Static("esc: close   y: copy", classes="modal-dim")

    def action_close(self) -> None:
        self.dismiss(None)

    def action_copy(self) -> None:
        """``y``: the verdict with its evidence (or the text selected with the mouse) to the clipboard."""
        selected = self.get_selected_text()
        deliver(self.app, Copied("selection", selected) if selected else verdict_copy(self.body.record, self.body.verdict, self.body._stages()))
