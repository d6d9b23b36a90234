"""GPUs: utilisation and memory per GPU with a short history, temperature, power, per-process
memory.  ``N/A`` values (``[N/A]``, ``[Not Supported]`` …) are shown as ``N/A``, never as 0; GPU
failures (nvidia-smi failed, hung, memory held by a dead pid) are shown with their layer.

Collection keeps going while the pane is hidden by a zoom; only the re-render is skipped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import Static

from ...core.probes.gpu import NaType
from ..format import fmt_mib, fmt_na, is_stale, one_line, spark
from ..shown import shown
from .base import Pane, Styled, findings_text, layer_tag, set_static

if TYPE_CHECKING:
    from ...core.observe import GPUView
    from ...core.probes.gpu import GPU, GPUProcess

__all__ = ["GpuPane", "GpuCard", "Spark", "HISTORY", "gpu_key"]

#: samples of history per GPU (one per refresh)
HISTORY = 60


def _num(v: object) -> float | None:
    if not isinstance(v, (int, float, str)):  # None, NA
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


#: how the process list was made (``GPUSnapshot.method``) → the line above it
METHODS = {
    "host query": "per-process memory: host query",
    "nvidia-smi": "per-process memory: nvidia-smi",
    "fd scan": "processes holding /dev/nvidia*: fd scan (no per-process memory)",
}


def _row_note(p: GPUProcess, outside: str | None) -> str:
    """What to know about one GPU process: a zombie, a pid that is gone, or who it is outside."""
    state = p.state
    if outside == "gone":
        return f"gone: no process {p.pid} on the host"
    if isinstance(state, str) and state.startswith("Z"):
        return f"zombie ({state})" + (f", outside: {outside}, host pid {p.pid}" if outside else "")
    if outside == "unknown":
        return f"not placed (host pid {p.pid})"
    if outside:
        return f"outside: {outside}, host pid {p.pid}"
    devices = p.devices
    return f"holds {devices}" if isinstance(devices, str) and devices else ""


def gpu_key(g: GPU) -> str:
    """A GPU's identity across snapshots: its uuid, else its index (a Slurm job's: on its node)."""
    node = g.node
    return (f"{node}/" if node else "") + (str(g.uuid) if not isinstance(g.uuid, NaType) else f"index-{g.index}")


class Spark(Styled, Widget):
    """A one-line history on a fixed 0–100 % scale, as wide as the widget is."""

    def __init__(self, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(**kw)
        self.values: list[float] = []

    def set_values(self, values: Iterable[float]) -> None:
        new, w = list(values), max(1, self.size.width)
        if new[-w:] != self.values[-w:] or not self.values:  # what is drawn changed (the last `width` values)
            self.refresh()
        self.values = new

    def render(self) -> Text:
        return Text(spark(self.values, self.size.width), style=self.cs("txt--spark"), no_wrap=True)


class GpuCard(Styled, Vertical):
    """One GPU: a heading line, then utilisation and memory, each with its sparkline."""

    def __init__(self, key: str, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(classes="gpu-card", **kw)
        self.key = key
        self.util: deque[float] = deque(maxlen=HISTORY)
        self.mem: deque[float] = deque(maxlen=HISTORY)
        self.gpu: GPU | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="gpu-head", markup=False)
        with Horizontal(classes="gpu-row"):
            yield Static("", classes="gpu-label gpu-util", markup=False)
            yield Spark(classes="gpu-spark gpu-util-spark")
        with Horizontal(classes="gpu-row"):
            yield Static("", classes="gpu-label gpu-mem", markup=False)
            yield Spark(classes="gpu-spark gpu-mem-spark")

    def on_mount(self) -> None:
        # the children exist from here on (``is_mounted`` is not yet true): draw what was sampled
        self._draw()

    def sample(self, gpu: GPU) -> None:
        """Record one snapshot of this GPU (also while hidden)."""
        self.gpu = gpu
        u, m = _num(gpu.utilization_pct), _num(gpu.memory_pct)
        if u is not None:
            self.util.append(u)
        if m is not None:
            self.mem.append(m)

    def head_text(self) -> Text:
        g = self.gpu
        t = Text(no_wrap=True, overflow="ellipsis")
        if g is None:
            return t
        name = fmt_na(g.name)
        node = g.node  # a Slurm job's GPUs: the node each is on
        t.append(f"{node + ':' if node else ''}GPU{fmt_na(g.index)} ", style=self.cs("txt--title"))
        t.append(f"{name[7:] if name.startswith('NVIDIA ') else name} ")
        temp = fmt_na(g.temperature_c, ".0f", "°C")
        t.append(f"{'temp N/A' if temp == 'N/A' else temp} ")
        draw, limit = fmt_na(g.power_draw_w, ".0f"), fmt_na(g.power_limit_w, ".0f")
        t.append("power N/A " if draw == "N/A" else f"{draw}/{limit} W ".replace("/N/A W", " W (limit N/A)"))
        t.append(f"{fmt_na(g.pstate)}", style=self.cs("txt--dim"))
        return t

    def refresh_view(self) -> None:
        if self.is_mounted:
            self._draw()

    def _draw(self) -> None:
        if self.gpu is None:
            return
        g = self.gpu
        try:
            head, util, mem = (self.query_one(c, Static) for c in (".gpu-head", ".gpu-util", ".gpu-mem"))
            util_spark, mem_spark = self.query_one(".gpu-util-spark", Spark), self.query_one(".gpu-mem-spark", Spark)
        except NoMatches:
            return  # its children are gone: removed, or the app closed before the card's mount was handled
        set_static(head, self.head_text())
        set_static(util, f"util {fmt_na(g.utilization_pct, '>3.0f', '%')}")
        used, total = fmt_mib(g.memory_used_mib), fmt_mib(g.memory_total_mib)
        amount = "" if used == total == "N/A" else f" {used}/{total}"
        set_static(mem, f"mem  {fmt_na(g.memory_pct, '>3.0f', '%')}{amount}")
        util_spark.set_values(self.util)
        mem_spark.set_values(self.mem)


class GpuPane(Pane):
    pane_id = "gpu"
    pane_title = "GPUs [3]"

    def __init__(self, clock: Callable[[], float], interval: float, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__(**kw)
        self.clock, self.interval = clock, interval
        self.view: GPUView | None = None
        self.cards: dict[str, GpuCard] = {}

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="gpu-scroll"):
            yield Static("", id="gpu-error", markup=False)
            yield Static("", id="gpu-findings", markup=False)
            yield Vertical(id="gpu-cards")
            yield Static("", id="gpu-procs", markup=False)

    def show(self, view: GPUView) -> None:
        self.view = view
        snap = view.snapshot
        if snap is not None:
            for g in snap.gpus:
                key = gpu_key(g)
                card = self.cards.get(key)
                if card is None:
                    card = self.cards[key] = GpuCard(key)
                card.sample(g)
        if self.hidden_by_zoom:
            self._dirty = True
            return
        self.redraw()

    def tick(self) -> None:
        v = self.view
        if v is None:
            return
        age = None if v.collected_at is None else self.clock() - v.collected_at
        err = v.error if v.snapshot is None or v.error != v.snapshot.error else None
        note = f"refresh failed: {one_line(err, 60)}" if err else ""
        self.set_freshness(age, is_stale(age, self.interval) or bool(err), note=note)

    def redraw(self) -> None:
        self._dirty = False
        if not self.is_mounted:
            return
        snap = self.view.snapshot if self.view is not None else None
        box = self.query_one("#gpu-cards", Vertical)
        live = {gpu_key(g) for g in (snap.gpus if snap else [])}
        for key, card in list(self.cards.items()):
            if key not in live:
                if card.parent is not None:
                    card.remove()
                del self.cards[key]
            elif card.parent is None:
                box.mount(card)  # it draws itself once mounted (GpuCard.on_mount)
            else:
                card.refresh_view()
        for wid, text in (("#gpu-error", self.error_text()), ("#gpu-procs", self.procs_text()),
                          ("#gpu-findings", self.findings_text())):
            w = self.query_one(wid, Static)
            set_static(w, text)
            w.display = bool(text.plain)  # an empty Static would still take a line
        self.tick()

    def error_text(self) -> Text:
        """A GPU failure, with its layer: ``✘ [gpu] NVIDIA-SMI has failed …``."""
        t = Text()
        v = self.view
        if v is None:
            return t
        snap = v.snapshot
        if v.error and (snap is None or not snap.gpus):
            lay = v.error_layer or "gpu"
            if "disabled in config" in v.error:
                t.append(f"GPU probe {v.error}", style=self.cs("txt--dim"))
                return t
            t.append("✘ ", style=self.cs("sev--error"))
            t.append_text(layer_tag(self, lay))
            t.append(f" {one_line(v.error, 300)}")
        elif snap is not None and snap.error:
            t.append("✘ ", style=self.cs("sev--error"))
            t.append_text(layer_tag(self, "gpu"))
            t.append(f" {one_line(snap.error, 300)}")
        return t

    def procs_text(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        snap = self.view.snapshot if self.view is not None else None
        if snap is None:
            return t
        head = METHODS.get(snap.method, "")
        note = shown(snap.method_note)  # remote words (lxc-info's error): data, never markup
        if head or note:
            t.append(head + (" · " if head and note else "") + note + "\n", style=self.cs("txt--dim"))
        if not snap.processes:
            if snap.gpus:
                t.append("no compute processes", style=self.cs("txt--dim"))
            t.rstrip()
            return t
        t.append("GPU  PID      MEM     PROCESS", style=self.cs("txt--dim"))
        for p in snap.processes:
            name = shown(fmt_na(p.process_name))  # the job's text: no escapes reach the terminal, no secret a shared screen
            cpid, owner = p.container_pid, p.owner
            outside = isinstance(owner, str) and owner not in ("container", "target")  # also "unknown": not placed
            pid = "-" if outside else (cpid if isinstance(cpid, int) else fmt_na(p.pid))
            mem = "?" if snap.method == "fd scan" else fmt_mib(p.used_memory_mib)
            node = p.node  # a Slurm job's: the node it runs on, before its GPU
            t.append(f"\n{(node + ':' if node else '') + fmt_na(p.gpu_index):<4} {pid:<8} {mem:>7}  {name.rsplit('/', 1)[-1] or name}")
            why = _row_note(p, owner if outside else None)
            if why:
                t.append(f"  {shown(why)}", style=self.cs("sev--error" if why.startswith(("zombie", "gone")) else "txt--dim"))
        return t

    def findings_text(self) -> Text:
        snap = self.view.snapshot if self.view is not None else None
        return Text() if snap is None else findings_text(self, snap.findings, 5)
