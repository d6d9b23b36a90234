"""The status line: target, connection state per layer, age of each pane's data, current action.

Stale data is never shown as fresh: an age above three refresh intervals gets a warning glyph and
the warning style, and its age; fresh data shows ``●``; data never collected shows ``—``.  The
line is repainted only when its text changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual.widgets import Static

from ...core.layers import Layer
from ..format import fmt_age, is_stale, link_states, one_line
from .base import Styled

__all__ = ["StatusLine", "StatusState"]

_LINK_GLYPH = {"ok": "✔", "fail": "✘", "unknown": "?", "n/a": "–"}


@dataclass
class StatusState:
    target: str = ""
    transport: str = "ssh"  # "ssh" | "local"
    where: str = ""
    read_only: bool = False
    #: share mode: secrets hidden on every pane (said next to READ-ONLY)
    shared: bool = False
    action: str | None = None
    action_since: float | None = None
    interval: float = 2.0
    #: part → (collected_at, error, error_layer)
    parts: dict[str, tuple[float | None, str | None, str | None]] = field(default_factory=dict)
    container_ok: bool | None = None
    demo: bool = False
    #: files changed in the deploy source since the last deploy (None: the source is not watched)
    changed: list[str] | None = None
    #: attempt on save is on (shown as "⟳ on save"), the loop's state and whether a save is queued
    on_save: bool = False
    loop_state: str = "idle"
    queued: bool = False
    #: the last config reload failed: the ConfigError's text (the running config stays)
    config_error: str | None = None
    #: the config file in use as a person reads it (``./cockpit.toml``), ``demo``, or '' (none: a test's config)
    config: str = ""
    #: part → "stream" (one long-lived remote command feeds it) or "poll" (a command per refresh),
    #: for the parts that can stream (gpu, kernel, log)
    modes: dict[str, str] = field(default_factory=dict)


class StatusLine(Styled, Static):
    PARTS = ("procs", "gpu", "log", "history")

    def __init__(self, state: StatusState, clock: Callable[[], float], **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__("", markup=False, **kw)
        self.state = state
        self.clock = clock
        self._shown: Text | None = None
        self._stale: tuple[bool, ...] = ()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        """Every second: redraw only when something on the line moves with time (a stale part's
        age, the running action's), or a part just turned stale (setters redraw themselves)."""
        st, now = self.state, self.clock()
        # only a collected part shows an age (a part never collected reads "—", set by its setter)
        stale = tuple(c is not None and (bool(e) or is_stale(now - c, st.interval)) for c, e, _ in st.parts.values())
        if st.action or any(stale) or stale != self._stale:
            self._stale = stale
            self.redraw()

    def redraw(self) -> None:
        """Repaint only when the line would read differently (fresh ages do not tick: see render)."""
        t = self.render()
        if t != self._shown:
            self._shown = t
            self.refresh()

    def update_part(self, part: str, collected_at: float | None, error: str | None = None, error_layer: Layer | str | None = None) -> None:
        layer = error_layer.value if isinstance(error_layer, Layer) else error_layer
        self.state.parts[part] = (collected_at, error, layer)
        if part == "procs":
            self.state.container_ok = error is None and collected_at is not None
        self.redraw()

    def set_action(self, action: str | None) -> None:
        self.state.action = action
        self.state.action_since = self.clock() if action else None
        self.redraw()

    def set_source(self, changed: list[str] | None, on_save: bool, loop_state: str = "idle", queued: bool = False) -> None:
        st = self.state
        st.changed, st.on_save, st.loop_state, st.queued = changed, on_save, loop_state, queued
        self.redraw()

    def set_mode(self, part: str, mode: str) -> None:
        """How ``part`` is read now: ``stream`` or ``poll`` (said on the line)."""
        self.state.modes[part] = mode
        self.redraw()

    def modes_text(self) -> str:
        """``stream gpu kernel · poll log`` ('' before any part said how it is read)."""
        by: dict[str, list[str]] = {}
        for part, mode in sorted(self.state.modes.items()):
            by.setdefault(mode, []).append(part)
        return " · ".join(f"{mode} {' '.join(parts)}" for mode, parts in sorted(by.items(), key=lambda kv: kv[0] != "stream"))

    def set_config_error(self, error: str | None) -> None:
        self.state.config_error = error
        self.redraw()

    def source_text(self) -> str:
        """``"✎ 2 changed: train.py, drafter.py ⟳ on save"`` ('' when there is nothing to say)."""
        st, bits = self.state, []
        if st.changed:
            names = [one_line(c).rsplit("/", 1)[-1] for c in st.changed]  # a file name is data: escapes out first (an OSC holds "/")
            shown = ", ".join(names[:3]) + (f", … {len(names) - 3} more" if len(names) > 3 else "")
            bits.append(f"✎ {len(names)} changed: {shown}")
        if st.on_save:
            bits.append("⟳ on save" + (" (+1 queued)" if st.queued else ""))
        return " ".join(bits)

    def link(self) -> dict[str, tuple[str, str]]:
        errors = [(lay, err) for (_, err, lay) in self.state.parts.values() if err]
        return link_states(transport=self.state.transport, errors=errors, container_ok=self.state.container_ok)

    def render(self) -> Text:
        st, now = self.state, self.clock()
        t = Text(no_wrap=True, overflow="ellipsis", end="")
        sep = Text(" │ ", style=self.cs("txt--dim"))
        if st.read_only:
            t.append(" SHARED · READ-ONLY " if st.shared else " READ-ONLY ", style=self.cs("txt--readonly"))
            t.append(" ")
        t.append(one_line(st.target, 60) or "?", style=self.cs("txt--title"))  # a name is data: never an escape
        if st.config and st.config != st.target:
            t.append(f" · {one_line(st.config, 80)}", style=self.cs("txt--dim"))
        if st.where:
            t.append(f" · {st.where}", style=self.cs("txt--dim"))
        if st.demo and "demo" not in (st.target, st.config):
            t.append(" (demo)", style=self.cs("txt--dim"))
        t.append_text(sep)
        links = self.link()
        for i, (layer, (state, _note)) in enumerate(links.items()):
            if i:
                t.append(" ")
            style = {"ok": self.cs("st--ok"), "fail": self.layer_style(layer), "unknown": self.cs("txt--dim"),
                     "n/a": self.cs("txt--dim")}[state]
            t.append(f"{layer} {_LINK_GLYPH[state]}", style=style)
        src = self.source_text()
        if src:
            t.append_text(sep)
            t.append(src, style=self.cs("txt--action"))
        t.append_text(sep)
        for i, part in enumerate(self.PARTS):
            if i:
                t.append(" ")
            collected, err, _ = st.parts.get(part, (None, None, None))
            if collected is None:  # nothing yet: never fresh; a warning once a refresh failed
                t.append(f"{part} {'⚠' if err else ''}—", style=self.cs("txt--stale") if err else self.cs("txt--dim"))
                continue
            age = now - collected
            stale = is_stale(age, st.interval) or bool(err)
            # fresh data says ● (live), not an age that ticks: a line that changes every second
            # repaints every second, the most an idle cockpit spends; stale data shows its age
            t.append(f"{part} ⚠{fmt_age(age)}" if stale else f"{part} ●", style=self.cs("txt--stale") if stale else self.cs("txt--fresh"))
        # how each part is read says nothing while the link is down: no stream feeds anything then
        down = any(links.get(layer, ("", ""))[0] == "fail" for layer in ("ssh", "host"))
        modes = "" if down else self.modes_text()
        if modes:
            t.append_text(sep)
            t.append(modes, style=self.cs("txt--dim"))
        if st.action:
            t.append_text(sep)
            since = "" if st.action_since is None else f" {fmt_age(now - st.action_since)}"
            t.append(f"▶ {st.action}{since}", style=self.cs("txt--action"))
        fails = [(part, err, lay) for part, (_, err, lay) in st.parts.items() if err]
        if fails:
            part, err, lay = fails[0]
            t.append_text(sep)
            t.append(f"✘ [{lay or '?'}] ", style=self.layer_style(lay))
            t.append(f"{part}: {one_line(err, 120)}")
        if st.config_error:
            t.append_text(sep)
            t.append("✘ [config] ", style=self.layer_style("config"))
            t.append(f"not reloaded: {one_line(st.config_error, 160)}")
        return t
