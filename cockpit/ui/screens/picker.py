"""Pick what ``cockpit init``/``cockpit connect`` writes a config for: a target, then its job.

A small app of its own (it runs before any config exists): the first level lists the targets
(the host, each container: status, GPU lines, how many jobs, zombies), the second the chosen
target's jobs (pid, user, where the output goes, argv); the detail panel shows the selected row's
evidence.  Arrows or j/k move, Enter chooses, Escape goes back a level (at the first level it
quits), ``q`` quits.  A target without a job is chosen as it is (a config with no job to adopt).
The app's result is the chosen :class:`~cockpit.core.discover.Candidate`, or None.

Every name, argv, path and environment value comes from the remote host: it is shown as data
(:func:`~cockpit.ui.panes.base.data_text`), never as markup, with no escape sequence.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...core.discover import Candidate, JobCandidate, TargetCandidate
from ..format import fmt_age
from ..panes.base import data_text

__all__ = ["PickerApp", "pick", "target_lines", "job_lines"]


def _when(start: int | None) -> str:
    if start is None:
        return "?"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)) + f" ({fmt_age(max(0.0, time.time() - start))} ago)"


def target_lines(t: TargetCandidate, jobs: list[JobCandidate]) -> list[str]:
    """The evidence for a target, one fact a line."""
    out = [t.label, f"status: {t.status}" + ("" if t.running else " (not running)")]
    if t.image:
        out.append(f"image: {t.image}")
    out.append(f"jobs: {len(jobs)}" if jobs else ("jobs: none found (a config without a job)" if t.scanned else "jobs: not scanned"))
    out.append(f"GPU config lines: {len(t.gpu_lines)}" if t.gpu_lines else "GPU config lines: none")
    out.extend(f"  {line}" for line in t.gpu_lines)
    if t.zombies:
        out.append(f"WARNING: {len(t.zombies)} zombie process(es): " + ", ".join(f"{z.pid} {z.comm} (parent {z.ppid})" for z in t.zombies))
    out.extend(f"problem: {p}" for p in t.problems)
    return out


def job_lines(t: TargetCandidate, j: JobCandidate) -> list[str]:
    """The evidence for a job, one fact a line."""
    out = [f"pid {j.pid} (parent {j.ppid}) in {t.label}", f"argv: {j.command}", f"cwd: {j.cwd or '?'}",
           f"user: {j.user or '?'}", f"started: {_when(j.start)}", f"output: {j.output}" + (f" ({j.stdout})" if j.stdout else "")]
    if j.stderr and j.stderr != j.stdout:
        out.append(f"stderr: {j.stderr}")
    out.append(f"log: {j.log_path} (from {j.log_source})" if j.log_path else "log: none found")
    out.append("evidence: " + "; ".join(j.evidence()))
    if j.env is None:
        out.append("env: unreadable")
    else:
        out.append("env: " + (", ".join(f"{k}={v}" for k, v in sorted(j.env.items())) or "nothing that matters"))
    if j.workers:
        out.append("workers: " + " ".join(str(w) for w in j.workers))
    mine = [z for z in t.zombies if z.ppid == j.pid or z.ppid in j.workers]
    if mine:
        out.append(f"WARNING: {len(mine)} zombie child(ren): " + ", ".join(f"{z.pid} {z.comm}" for z in mine))
    return out


def _target_row(t: TargetCandidate, jobs: list[JobCandidate]) -> Text:
    gpu = f"GPU {len(t.gpu_lines)} line(s)" if t.gpu_lines else "no GPU lines"
    zomb = f"  {len(t.zombies)} zombie(s)" if t.zombies else ""
    return data_text(f"{t.label}  [{t.status}]  {gpu}  {len(jobs)} job(s){zomb}")


def _job_row(j: JobCandidate) -> Text:
    return data_text(f"{j.pid:>7}  {j.user or '?':<8}  {j.output:<6}  {j.command[:160]}")


class PickerApp(App[Candidate | None]):
    """Targets, then jobs; ``self.return_value`` is the chosen candidate or None."""

    TITLE = "cockpit: pick a target and its job"
    DEFAULT_CSS = """
    #picker-title { height: 1; text-style: bold; padding: 0 1; }
    #picker-list { height: auto; max-height: 50%; }
    #picker-detail { height: 1fr; border: round $primary; padding: 0 1; }
    #picker-keys { height: 1; color: $text-muted; padding: 0 1; }
    """
    BINDINGS = [
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
        Binding("escape", "go_back", "Back"),
        Binding("q", "quit_none", "Quit"),
    ]

    def __init__(self, cands: list[Candidate], *, host: str = "") -> None:
        super().__init__()
        self.cands, self.host = cands, host
        self.groups: list[tuple[TargetCandidate, list[Candidate]]] = []
        for c in cands:
            group = next((g for t, g in self.groups if t is c.target), None)
            if group is None:
                self.groups.append((c.target, [c]))
            else:
                group.append(c)
        self.target: TargetCandidate | None = None  # None: the first level

    def compose(self) -> ComposeResult:
        yield Static(id="picker-title")
        yield OptionList(id="picker-list")
        yield Static(id="picker-detail")
        yield Static("↑/↓ or j/k move · Enter choose · Esc back · q quit", id="picker-keys")

    def on_mount(self) -> None:
        if len(self.groups) == 1 and any(c.job for c in self.groups[0][1]):
            self.show_jobs(self.groups[0][0])
        else:
            self.show_targets()

    # the two levels ---------------------------------------------------------------------------
    def _jobs_of(self, t: TargetCandidate) -> list[Candidate]:
        return next((g for tt, g in self.groups if tt is t), [])

    def show_targets(self, at: TargetCandidate | None = None) -> None:
        self.target = None
        where = f" on {self.host}" if self.host else ""
        self.query_one("#picker-title", Static).update(data_text(f"targets{where}: Enter to see its jobs"))
        rows = [Option(_target_row(t, [c.job for c in g if c.job]), id=f"t{i}") for i, (t, g) in enumerate(self.groups)]
        self._fill(rows, next((i for i, (t, _g) in enumerate(self.groups) if t is at), 0))

    def show_jobs(self, t: TargetCandidate) -> None:
        self.target = t
        self.query_one("#picker-title", Static).update(data_text(f"jobs in {t.label}: Enter to write the config for it"))
        rows = [Option(_job_row(c.job), id=f"j{i}") for i, c in enumerate(self._jobs_of(t)) if c.job]
        self._fill(rows, 0)

    def _fill(self, rows: list[Option], at: int) -> None:
        ol = self.query_one("#picker-list", OptionList)
        ol.clear_options()
        ol.add_options(rows)
        ol.highlighted = at if rows else None
        ol.focus()
        self._detail(at)

    def _detail(self, index: int | None) -> None:
        lines: list[str] = []
        if index is not None and self.target is None and 0 <= index < len(self.groups):
            t, g = self.groups[index]
            lines = target_lines(t, [c.job for c in g if c.job])
        elif index is not None and self.target is not None:
            jobs = [c for c in self._jobs_of(self.target) if c.job]
            job = jobs[index].job if 0 <= index < len(jobs) else None
            if job is not None:
                lines = job_lines(self.target, job)
        self.query_one("#picker-detail", Static).update(data_text("\n".join(lines)))

    # events and keys --------------------------------------------------------------------------
    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._detail(event.option_index)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        i = event.option_index
        if self.target is None:
            t, g = self.groups[i]
            if any(c.job for c in g):
                self.show_jobs(t)
            else:
                self.exit(g[0])  # a target with no job: the config without a job to adopt
            return
        jobs = [c for c in self._jobs_of(self.target) if c.job]
        self.exit(jobs[i])

    def action_move(self, step: int) -> None:
        ol = self.query_one("#picker-list", OptionList)
        if step > 0:
            ol.action_cursor_down()
        else:
            ol.action_cursor_up()

    def action_go_back(self) -> None:
        if self.target is not None and len(self.groups) > 1:
            self.show_targets(self.target)
        else:
            self.exit(None)

    def action_quit_none(self) -> None:
        self.exit(None)


def pick(cands: list[Candidate], *, host: str = "") -> Candidate | None:
    """Run the picker on this terminal; the chosen candidate, or None (nothing chosen)."""
    return PickerApp(cands, host=host).run()
