"""Start the TUI (``cockpit`` without a sub-command)."""

from __future__ import annotations

import sys

from .config import Config

DEMO_NOTICE = "no config found: running the built-in demo (copy sample_config.toml to ./cockpit.toml for your target)"


def run_tui(cfg: Config | None, *, read_only: bool = False, share: bool = False) -> int:
    notice = ""
    if cfg is None:
        from .demo import demo_config

        print(f"cockpit: {DEMO_NOTICE}", file=sys.stderr)
        cfg = demo_config()
        notice = DEMO_NOTICE
    from .ui.app import create_app

    while True:
        app = create_app(cfg, read_only=read_only, notice=notice, share=share)
        rc = app.run()
        if app.switch_to is None:
            return int(rc or 0)
        cfg, notice = cfg.for_target(app.switch_to), ""  # `>`: the same cockpit on another target
