"""``cockpit status``: what is true about the target right now, layer by layer.

The report is plain data (JSON-ready).  Each part carries ``collected_at`` so a reader can tell
stale data from fresh.
"""

from __future__ import annotations

import time
from typing import Any

from ..config import Config
from .connectivity import check_connectivity
from .layers import Verdict
from .remote import make_transport

__all__ = ["collect_status"]


async def collect_status(cfg: Config, *, quick: bool = False) -> dict[str, Any]:
    transport = make_transport(cfg)
    try:
        verdict = Verdict("status")
        await check_connectivity(transport, cfg, verdict)
        verdict.finish()
        report: dict[str, Any] = {
            "ok": verdict.ok,
            "target": cfg.display_name,
            "transport": transport.description,
            "collected_at": time.time(),
            "verdict": verdict.to_dict(),
            "findings": [],
        }
        return report
    finally:
        await transport.close()
