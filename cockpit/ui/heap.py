"""The TUI's heap after start-up: frozen out of the cyclic collector's full collections."""

from __future__ import annotations

import gc

__all__ = ["FREEZE_AFTER_S", "freeze_heap"]

#: seconds after the app mounted (its first refreshes drawn) before :func:`freeze_heap`
FREEZE_AFTER_S = 1.0


def freeze_heap() -> None:
    """Collect once, then move every object alive (~130,000 after start-up: Textual's widgets,
    styles and caches, the config, the imported modules) to the collector's permanent generation.

    A full collection otherwise walks all of them again every few seconds while a log streams
    (80–110 ms a time, the screen frozen meanwhile: the largest of the log pane's lag peaks); after
    the freeze one walks only what came since (21–25 ms).  What start-up made and still uses is
    never garbage; what it leaves behind is collected first.  ``cockpit`` only: a process that
    starts many apps (the tests) would keep each one's objects for ever."""
    gc.collect()
    gc.freeze()
