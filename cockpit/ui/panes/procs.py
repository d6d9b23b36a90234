"""The container's process tree: a DataTable updated by row key (pid), never cleared.

Zombies (``Z``), processes stuck in ``D`` and the job's own processes stand out by a flag column
(``Z!``, ``D!``, ``●``) *and* a style; a zombie's command names its parent (the one that has not
reaped it).  The findings (zombie, D state, job missing, duplicate job) are listed under the table.
Cockpit's own processes (its session shell and probes: ``own_pids``) are hidden unless ``show_own``
(the ``own-procs`` key); the subtitle counts them.
While some process holds GPU memory a GPU column shows how much (``dev``: it holds ``/dev/nvidia*``,
amount unknown: the fd scan).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from ...core.probes.gpu import NaType
from ...core.probes.procs import Proc, ProcTree
from ..format import fmt_age, fmt_elapsed, fmt_kib, fmt_mib, is_stale, one_line
from .base import Pane, findings_text, set_static
from .table import sync_rows

if TYPE_CHECKING:
    from ...core.observe import ProcsView

__all__ = ["ProcsPane"]

COLUMNS = (("flag", ""), ("pid", "PID"), ("stat", "STAT"), ("age", "AGE"), ("cpu", "CPU%"), ("rss", "RSS"),
           ("gpu", "GPU"), ("cmd", "COMMAND"))
#: below this pane width only flag, PID, STAT, GPU and COMMAND are shown (zoom shows everything)
WIDE_AT = 64
_NARROW = ("flag", "pid", "stat", "gpu", "cmd")


class ProcsPane(Pane):
    pane_id = "procs"
    pane_title = "processes [1]"

    def __init__(self, clock: Callable[[], float], interval: float, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(**kw)
        self.clock, self.interval = clock, interval
        self.view: ProcsView | None = None
        self.job_only = False
        self.show_own = False
        self.wide = False
        #: the GPU column is there only while some process holds GPU memory
        self.gpu_col = False

    def compose(self) -> ComposeResult:
        table: DataTable[Any] = DataTable(id="procs-table", cursor_type="row", zebra_stripes=False)  # Any: DataTable cells (str and Text)
        self._columns(table)
        yield table
        yield Static("", id="procs-findings", markup=False)

    def _shown(self, key: str) -> bool:
        return (self.wide or key in _NARROW) and (key != "gpu" or self.gpu_col)

    def _columns(self, table: DataTable[Any]) -> None:  # Any: DataTable cells (str and Text)
        for key, label in COLUMNS:
            if self._shown(key):
                table.add_column(label, key=key)

    def on_resize(self) -> None:
        wide = self.size.width >= WIDE_AT
        if wide != self.wide:
            self.wide = wide
            table = self.table
            table.clear(columns=True)  # only when the column set changes, never on a refresh
            self._columns(table)
            self.redraw()

    @property
    def table(self) -> DataTable[Any]:  # Any: DataTable cells (str and Text)
        return self.query_one("#procs-table", DataTable)

    def show(self, view: ProcsView) -> None:
        self.view = view
        if self.hidden_by_zoom:
            self._dirty = True
            return
        self.redraw()

    def tick(self) -> None:
        if self.view is not None:
            age = None if self.view.collected_at is None else self.clock() - self.view.collected_at
            self.set_freshness(age, is_stale(age, self.interval) or bool(self.view.error), note=self._note())

    def _note(self) -> str:
        v = self.view
        n = len(v.procs) if v is not None else 0
        own = len(v.own_pids) if v is not None else 0
        parts = [f"{n - own} procs" + (f" + {own} cockpit's own" + (" shown" if self.show_own else " hidden (o)") if own else "")]
        nodes = list(v.nodes) if v is not None else []
        if nodes:
            parts.append(f"on {len(nodes)} node{'s' if len(nodes) > 1 else ''}: " + one_line(", ".join(nodes), 60))
        note = v.note if v is not None else ""
        if note:
            parts.append(one_line(note, 80))
        if self.job_only:
            parts.append("job only (j)")
        if v is not None and v.error:
            parts.append(f"refresh failed: {one_line(v.error, 60)}")
        return " · ".join(parts)

    def set_job_only(self, on: bool) -> None:
        self.job_only = on
        self.redraw()

    def set_show_own(self, on: bool) -> None:
        self.show_own = on
        self.redraw()

    def rows(self) -> list[tuple[str, list[Any]]]:  # Any: DataTable cells (str and Text)
        v = self.view
        if v is None or not v.procs:
            return []
        job_pids = set(v.job_pids)
        own = set() if self.show_own else set(v.own_pids)
        out: list[tuple[str, list[Any]]] = []  # Any: DataTable cells
        by_node: dict[str, list[Proc]] = {}
        for p in v.procs:  # a Slurm job's nodes each have their own pids: one tree per node
            by_node.setdefault(p.node, []).append(p)
        for node, procs in by_node.items():
            tree = ProcTree(procs)
            job_groups = {p.pgid for p in procs if p.pid in job_pids}
            for depth, p in tree.walk():
                if p.pid in own:
                    continue
                is_job = p.pid in job_pids or (p.pgid in job_groups and p.pgid != 0)
                if self.job_only and not (is_job or p.is_zombie or p.is_uninterruptible or p.pid == 1):
                    continue
                out.append((f"{node}:{p.pid}" if node else str(p.pid), self._cells(tree, depth, p, is_job)))
        return out

    def selected_proc(self) -> Proc | None:
        """The process on the cursor's row (None: no row, or a Slurm node's process: not adoptable here)."""
        t, v = self.table, self.view
        if v is None or t.row_count == 0:
            return None
        try:
            key = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - a cursor on no row (Textual raises CellDoesNotExist): nothing selected
            return None
        if key is None or not key.isdigit():
            return None
        return next((p for p in v.procs if p.pid == int(key) and not p.node), None)

    def _cells(self, tree: ProcTree, depth: int, p: Proc, is_job: bool) -> list[Any]:  # Any: DataTable cells
        if p.is_zombie:
            flag, row_style = "Z!", self.cs("txt--zombie")
        elif p.is_uninterruptible:
            flag, row_style = "D!", self.cs("txt--dstate")
        elif is_job:
            flag, row_style = "● ", self.cs("txt--job")
        else:
            flag, row_style = "  ", None
        indent = "  " * min(depth, 12) + ("└ " if depth else "")
        cmd = Text(indent, no_wrap=True)
        cmd.append(one_line(p.args or p.name) or p.name, style=row_style)
        if p.is_zombie:
            parent = tree.parent(p.pid)
            who = f"{parent.pid} {one_line(parent.name)}" if parent is not None else f"{p.ppid} (outside the container)"
            cmd.append(f"  ← parent {who} has not reaped it", style=self.cs("txt--dim"))
        elif p.is_uninterruptible and p.wchan and p.wchan != "-":
            cmd.append(f"  (in kernel: {p.wchan})", style=self.cs("txt--dim"))
        cells = {
            "flag": Text(flag, style=row_style) if row_style else Text(flag),
            "pid": Text(str(p.pid), style=row_style or ""),
            "stat": Text(p.state, style=row_style or ""),
            # coarse: seconds only in a process's first minute; a cell that changed on every
            # refresh for every row re-measured and repainted the whole table each time
            "age": fmt_age(p.elapsed_s) if (p.elapsed_s or 0) >= 60 else fmt_elapsed(p.elapsed_s),
            "cpu": f"{p.cpu:.0f}",
            "rss": fmt_kib(p.rss_kb),
            "gpu": self._gpu_cell(p.pid),
            "cmd": cmd,
        }
        return [cells[key] for key, _ in COLUMNS if self._shown(key)]

    def _gpu_cell(self, pid: int) -> str:
        """GPU memory the process holds; ``dev`` when only the fd scan saw it (no amount)."""
        mib = self.view.gpu_mib.get(pid) if self.view is not None else None
        return "" if mib is None else ("dev" if isinstance(mib, NaType) else fmt_mib(mib))

    def redraw(self) -> None:
        self._dirty = False
        if not self.is_mounted:
            return
        gpu_col = bool(self.view.gpu_mib) if self.view is not None else False
        if gpu_col != self.gpu_col:
            self.gpu_col = gpu_col
            self.table.clear(columns=True)  # only when the column set changes, never on a refresh
            self._columns(self.table)
        with self.app.batch_update():
            sync_rows(self.table, self.rows(), key_column=1)
        findings = self.findings_text()
        box = self.query_one("#procs-findings", Static)
        set_static(box, findings)
        box.display = bool(findings.plain)
        self.tick()

    def findings_text(self) -> Text:
        v = self.view
        if v is None:
            return Text()
        t = findings_text(self, v.findings, 6, advice=True)
        if len(v.findings) > 6:
            t.append(f"\n… {len(v.findings) - 6} more", style=self.cs("txt--dim"))
        return t

    def on_show(self) -> None:
        if self._dirty:
            self.redraw()
