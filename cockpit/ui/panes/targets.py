"""The target strip: one entry per target of a ``[[targets]]`` config, under the status line.

``▸ train ✔ #4 passed │ eval ✘ host ⚠`` : the selected target first marked ``▸``; each entry its
reachability (✔, or ✘ and the layer that failed), its latest attempt and outcome (and the fate
when the job died or stalled since), and ``⚠`` when it needs a look.  The others are checked at a
lower rate (:class:`cockpit.core.targets_poll.TargetsPoll`); ``>`` / ``<`` switch.  Names and
details are data: shown as text, never markup (ui/shown.py).
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from ...core.targets_poll import TargetSummary
from ..shown import shown
from .base import Styled

__all__ = ["TargetStrip"]


class TargetStrip(Styled, Static):
    def __init__(self, names: list[str], selected: str, **kw: Any) -> None:  # Any: Textual widget options (id, classes, …)
        super().__init__("", markup=False, **kw)
        self.selected = selected
        self.summaries = {n: TargetSummary(n) for n in names}

    def update_summaries(self, summaries: list[TargetSummary]) -> None:
        for s in summaries:
            self.summaries[s.name] = s
        self.refresh()

    def attention(self) -> list[str]:
        return [n for n, s in self.summaries.items() if s.attention and n != self.selected]

    def render(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis", end="")
        for i, (name, s) in enumerate(self.summaries.items()):
            if i:
                t.append(" │ ", style=self.cs("txt--dim"))
            mine = name == self.selected
            t.append(("▸ " if mine else "  ") + shown(name), style=self.cs("txt--title") if mine else Style())
            if s.reachable is None:
                t.append(" …", style=self.cs("txt--dim"))
            elif s.reachable:
                t.append(" ✔", style=self.cs("st--ok"))
            else:
                t.append(f" ✘ {s.layer or '?'}", style=self.layer_style(s.layer))
            if s.attempt is not None:
                t.append(f" #{s.attempt} {s.outcome or ''}", style=self.cs("txt--dim"))
                if s.fate in ("died", "diverged", "stalled", "vanished"):
                    t.append(f" → {s.fate}", style=self.cs("txt--stale"))
            if s.attention and not mine:
                t.append(" ⚠", style=self.cs("txt--stale"))
        return t

