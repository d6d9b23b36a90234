"""Live progress of a headless action on a terminal: one block of stage lines, rewritten in place.

The CLI is a subscriber of the engine like the TUI.  When stderr is a terminal (and not ``--json``),
the stages of the running action are drawn with Rich's live display on stderr and vanish when the
action ends; the verdict is then printed once, on stdout.  Pipes get no live lines at all, so a
script reads exactly one verdict.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..core.events import Event, StageProgress
from ..core.render import STATUS_GLYPH as GLYPH

__all__ = ["LiveStages", "live_wanted"]



def live_wanted(args: Any) -> bool:
    return not getattr(args, "json", False) and sys.stderr.isatty()


class LiveStages:
    """Subscribe with :meth:`on_event`; use as a context manager around the engine's work."""

    def __init__(self, max_lines: int = 30) -> None:
        self.lines: list[tuple[str, str]] = []  # (key, rendered) in order; a running stage is replaced when decided
        self.max_lines = max_lines
        self.live = Live(Text(""), console=Console(stderr=True), transient=True, auto_refresh=False)

    def __enter__(self) -> LiveStages:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def on_event(self, ev: Event) -> None:
        if not isinstance(ev, StageProgress):
            return
        st = ev.stage
        key = f"{ev.action}: {st.name}"
        line = f"  {GLYPH.get(st.status.value, '?')} [{st.layer.value:<9}] {key:<30} {st.detail}"
        for i, (k, _) in enumerate(self.lines):
            if k == key:
                self.lines[i] = (key, line)
                break
        else:
            self.lines.append((key, line))
        text = Text("\n".join(line for _, line in self.lines[-self.max_lines:]), no_wrap=True, overflow="ellipsis")
        self.live.update(text, refresh=True)
