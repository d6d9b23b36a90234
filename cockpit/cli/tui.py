"""Start the TUI (``cockpit`` without a sub-command).

The config comes from the one resolution every sub-command uses (:func:`cockpit.cli.args.resolve`);
the built-in demo runs only when no config exists anywhere, and says so.  The path in use is
printed before the screen opens and named on the status line.
"""

from __future__ import annotations

import gc
import sys

from .args import Resolved

DEMO_NOTICE = "no config found: running the built-in demo (copy sample_config.toml to ./cockpit.toml for your target)"


def run_tui(found: Resolved, *, read_only: bool = False, share: bool = False) -> int:
    cfg, source = found.cfg, found.source
    notice = ""
    if found.fallback:
        print(f"cockpit: {DEMO_NOTICE}", file=sys.stderr)
        notice = DEMO_NOTICE
    else:
        print(f"cockpit: {cfg.display_name} · {source}", file=sys.stderr)
    from ..ui.app import create_app

    while True:
        gc.unfreeze()  # a target switched to with `>`: the last app's objects may go now
        app = create_app(cfg, read_only=read_only, notice=notice, share=share, source=source)
        app.freeze_gc = True
        rc = app.run()
        if app.switch_to is None:
            return int(rc or 0)
        cfg, notice = cfg.for_target(app.switch_to), ""  # `>`: the same cockpit on another target
