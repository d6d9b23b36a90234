"""Start the TUI (or, until it exists, show the status of the configured or demo target)."""

from __future__ import annotations

import sys

from .config import Config


def run_tui(cfg: Config | None, *, read_only: bool = False) -> int:
    import asyncio

    from .cli import render_status
    from .core.status import collect_status

    if cfg is None:
        from .demo import demo_config

        print("cockpit: no config found, running the built-in demo (see README: Configure)", file=sys.stderr)
        cfg = demo_config()
    report = asyncio.run(collect_status(cfg))
    print(render_status(report))
    return 0 if report["ok"] else 1
