"""The verdict strip: the current (or last) action's stages, live, and its outcome.

Three lines: an outcome banner (``✘ FAILED — the code ran and failed (app)`` on a solid error
background, ``⊘ UNTESTED — the fix never ran (ssh)`` hatched amber), the stages grouped by step
(``connect ✔✔✔✔  deploy ✔✔✔  …  verify ✔✘⊘⊘⊘``), and the one stage that matters now (the failing
one, or the running one) with its layer as a label and a colour.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from ...core.engine import NO_JOB_STAGE
from ...core.fate_record import Fate, fate_text
from ...core.layers import Stage, Status, Verdict
from ..format import one_line, outcome_text, status_glyph
from .base import Styled, layer_tag, set_static

if TYPE_CHECKING:
    from ...core.journal import AttemptRecord

__all__ = ["VerdictStrip", "stage_group", "StageRow"]

CONNECT_NAMES = ("ssh reached", "host answers", "target shell answers", "workdir exists")
BANNER_CLASSES = ("-passed", "-failed", "-untested", "-interrupted", "-running", "-idle", "-ok", "-refused")


def stage_group(action: str, name: str) -> tuple[str, str]:
    """(step, stage name) for display: ``deploy: source`` → (``deploy``, ``source``)."""
    if ": " in name:
        g, _, n = name.partition(": ")
        return g, n
    if name in CONNECT_NAMES:
        return "connect", name
    return action, name


@dataclass
class StageRow:
    group: str
    name: str
    status: str
    layer: str
    detail: str
    advice: str = ""
    #: what a display needs for a progress bar: ``wait`` (since, deadline_s) or ``progress`` (done, total, unit)
    data: dict[str, Any] = field(default_factory=dict)  # Any: a stage's JSON data


class VerdictStrip(Styled, Vertical):
    def __init__(self, clock: Callable[[], float], **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(**kw)
        self.clock = clock
        self.action: str | None = None
        self.note: str = ""
        self.attempt: int | None = None
        self.rows: list[StageRow] = []
        self.state = "idle"  # idle | running | passed | failed | untested | interrupted | ok | refused
        self.fail_layer: str | None = None
        self.message = "no action yet: press t to attempt a fix"
        self.started_at: float | None = None
        self.duration_s: float | None = None
        #: shown from the journal (at start-up), not an action of this cockpit: a ``running`` outcome
        #: there is a launch's "no verdict yet", not something in progress; with its job's fate
        self.from_journal = False
        self.fate = ""

    def compose(self) -> ComposeResult:
        with Horizontal(id="verdict-head"):
            yield Static("", id="verdict-banner", markup=False)
            yield Static("", id="verdict-title", markup=False)
        yield Static("", id="verdict-stages", markup=False)
        yield Static("", id="verdict-detail", markup=False)

    def on_mount(self) -> None:
        # after the Mount event: Textual counts a widget mounted only once its handler returned, and
        # redraw draws nothing before (the idle strip stayed blank, its hint unread, until an action)
        self.call_later(self.redraw)

    # -- state changes (called from the app's message handlers) ------------------------------
    def start(self, action: str, note: str = "") -> None:
        self.from_journal, self.fate = False, ""
        self.action, self.note, self.attempt = action, note, None
        self.rows, self.state, self.fail_layer, self.message = [], "running", None, ""
        self.started_at, self.duration_s = self.clock(), None
        self.redraw()

    def stage(self, action: str, stage: Stage) -> None:
        group, name = stage_group(action, stage.name)
        bar: dict[str, Any] = {k: stage.data[k] for k in ("wait", "progress") if k in stage.data} if stage.status in (Status.RUNNING, Status.PENDING) else {}  # Any: a stage's JSON data
        row = StageRow(group, name, stage.status.value, stage.layer.value, stage.detail, stage.advice, bar)
        for i, r in enumerate(self.rows):
            if r.group == group and r.name == name:
                self.rows[i] = row
                break
        else:
            self.rows.append(row)
        self.redraw()

    def finish(self, action: str, verdict: Verdict | None, *, outcome: str | None = None, attempt: int | None = None,
               error: str | None = None, duration_s: float | None = None) -> None:
        self.action, self.attempt, self.duration_s = action, attempt, duration_s
        self.from_journal, self.fate = False, ""
        if verdict is not None:
            self.rows = [StageRow(*stage_group(action, s.name), s.status.value, s.layer.value, s.detail, s.advice) for s in verdict.stages]
            self.fail_layer = verdict.layer.value if verdict.layer else None
        if error is not None:
            self.state, self.message = "failed", f"cockpit error: {error}"
        elif outcome is not None:
            self.state = outcome
        elif verdict is not None:
            self.state = "failed" if verdict.failed_stage is not None else ("running" if verdict.pending else "ok")
            if _nothing_launched(verdict):  # not a failure of anything: there was no job to judge
                self.state = "untested"
        self.redraw()

    def refused(self, action: str, reason: str) -> None:
        self.state, self.message = "refused", f"{action} refused: {reason}"
        self.redraw()

    def show_record(self, rec: AttemptRecord) -> None:
        """Show an attempt from the journal (at start-up: the last one)."""
        if self.state == "running" and not self.from_journal:
            return  # an action of this cockpit is under way
        self.from_journal, self.fate = True, fate_text(rec.fate, short=True)
        self.action, self.note, self.attempt = "attempt", rec.note, rec.attempt
        self.rows = [StageRow(*stage_group(s.action, s.stage.name), s.stage.status.value, s.stage.layer.value,
                              s.stage.detail, s.stage.advice) for s in rec.stages]
        self.state = rec.outcome_name
        self.fail_layer = rec.layer_name or None
        self.duration_s = rec.duration_s
        self.redraw()

    def show_fate(self, attempt: int, fate: Fate) -> None:
        """The shown attempt's job changed fate after its verdict: ``✔ PASSED — … → died (app) after
        4m12s`` (a banner that kept ✔ PASSED over a dead job told half the story on a shared screen)."""
        if attempt != self.attempt or self.state == "running" and not self.from_journal:
            return
        text = "" if fate.state == "running" and not fate.layer else fate_text(fate, short=True)
        if text != self.fate:
            self.fate = text
            self.redraw()

    # -- rendering ---------------------------------------------------------------------------
    def _groups(self) -> list[tuple[str, list[StageRow]]]:
        out: list[tuple[str, list[StageRow]]] = []
        for r in self.rows:
            if out and out[-1][0] == r.group:
                out[-1][1].append(r)
            else:
                out.append((r.group, [r]))
        return out

    def focus_row(self) -> StageRow | None:
        """The stage that matters now: the failing one, else the running/pending one, else the last."""
        for want in (Status.FAIL.value, Status.RUNNING.value, Status.PENDING.value):
            hit = next((r for r in self.rows if r.status == want), None)
            if hit is not None:
                return hit
        return self.rows[-1] if self.rows else None

    def banner_text(self) -> str:
        st = self.state
        if st == "idle":
            return "· IDLE"
        if st == "refused":
            return "■ REFUSED"
        if st == "ok":
            return f"✔ {self.action} OK"
        if self.action != "attempt" and st == "failed":
            return f"✘ {self.action} FAILED" + (f" ({self.fail_layer})" if self.fail_layer else "")
        if st == "running" and not self.from_journal:
            return f"▶ {self.action or ''} RUNNING".replace("  ", " ")
        text = outcome_text(st, self.fail_layer)
        return f"{text} → {self.fate}" if self.fate else text

    def redraw(self) -> None:
        if not self.is_mounted:
            return
        banner = self.query_one("#verdict-banner", Static)
        want = f"-{self.state}"
        for c in BANNER_CLASSES:  # classes only on change: Textual re-applies the stylesheet on each
            if c != want and banner.has_class(c):
                banner.remove_class(c)
        if not banner.has_class(want):
            banner.add_class(want)
        set_static(banner, f" {self.banner_text()} ")
        title = Text(no_wrap=True, overflow="ellipsis")
        if self.action == "attempt" and self.attempt is not None:
            title.append(f"attempt #{self.attempt}", style=self.cs("txt--title"))
        elif self.action:
            title.append(self.action, style=self.cs("txt--title"))
        if self.note:
            title.append(f"  “{one_line(self.note, 200)}”")
        if self.duration_s is not None:
            title.append(f"  {self.duration_s:.1f}s", style=self.cs("txt--dim"))
        elif self.state == "running" and self.started_at is not None and not self.from_journal:
            title.append(f"  {self.clock() - self.started_at:.0f}s", style=self.cs("txt--dim"))
        set_static(self.query_one("#verdict-title", Static), title, layout=False)  # one line: its elapsed time ticks
        set_static(self.query_one("#verdict-stages", Static), self.stages_text())
        set_static(self.query_one("#verdict-detail", Static), self.detail_text(), layout=False)  # one line (no_wrap): a bar ticks

    def stages_text(self) -> Text:
        t = Text(overflow="fold")
        if not self.rows:
            t.append(one_line(self.message) or ("waiting for the first stage…" if self.state == "running" else ""), style=self.cs("txt--dim"))
            return t
        for i, (group, rows) in enumerate(self._groups()):
            if i:
                t.append("  ")
            failed = any(r.status == Status.FAIL.value for r in rows)
            t.append(group + " ", style=self.cs("sev--error") if failed else self.cs("txt--dim"))
            for r in rows:
                t.append(status_glyph(r.status), style=self.status_style(r.status))
        return t

    def detail_text(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        if self.message and self.state in ("refused", "failed") and not self.rows:
            t.append(one_line(self.message), style=self.cs("sev--error"))
            return t
        r = self.focus_row()
        if r is None:
            return t
        t.append(status_glyph(r.status) + " ", style=self.status_style(r.status))
        t.append_text(layer_tag(self, r.layer))
        t.append(f" {r.group} › {r.name}", style=self.cs("txt--title"))
        bar = progress_bar(r.data, self.clock()) if r.status in (Status.RUNNING.value, Status.PENDING.value) else None
        if bar is not None:
            t.append(f" {bar}", style=self.cs("txt--action"))
        if r.detail:
            t.append(f": {one_line(r.detail)}")
        if r.status == Status.FAIL.value and r.advice:
            t.append(f"  → {one_line(r.advice)}", style=self.cs("txt--dim"))
        return t

    def plain(self) -> str:
        """The strip as text (tests, screen readers)."""
        return "\n".join([self.banner_text(), self.stages_text().plain, self.detail_text().plain])

    def stage_rows(self) -> Iterable[StageRow]:
        return list(self.rows)


def progress_bar(data: dict[str, Any], now: float, width: int = 12) -> str | None:  # Any: a stage's JSON data
    """``▕████░░░░░░░░▏ 14s of 60s`` for a wait against a deadline (a model loading within
    startup_timeout, a container coming back), ``▕██████░░░░░░▏ 120 of 240 files`` for counted work;
    None when the stage carries neither."""
    wait, prog = data.get("wait"), data.get("progress")
    if isinstance(prog, dict) and prog.get("total"):
        done, total = float(prog.get("done") or 0), float(prog["total"])
        share, label = done / total, f"{done:g} of {total:g}" + (f" {prog['unit']}" if prog.get("unit") else "")
    elif isinstance(wait, dict) and wait.get("deadline_s"):
        since = wait.get("since")
        elapsed, deadline = max(0.0, now - float(now if since is None else since)), float(wait["deadline_s"])
        share, label = elapsed / deadline, f"{elapsed:.0f}s of {deadline:g}s"
    else:
        return None
    filled = round(min(1.0, max(0.0, share)) * width)
    return "▕" + "█" * filled + "░" * (width - filled) + "▏ " + label


def _nothing_launched(verdict: Verdict) -> bool:
    """A verify that found no job recorded (:meth:`~cockpit.core.engine.Engine.run_action`): the
    banner says untested, as :func:`~cockpit.core.layers.outcome_of` does, not "verify FAILED (process)"."""
    st = verdict.failed_stage
    return verdict.action == "verify" and st is not None and st.name == NO_JOB_STAGE
