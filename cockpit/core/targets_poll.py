"""The other targets, polled at a lower rate: one line of truth per target for the TUI's strip.

The selected target has the panes; every target (the selected one too) keeps being checked (``collect_status(quick=True)``:
the connectivity stages, the reconcile that records a passed job's death, the latest attempt and
its fate) every :attr:`TargetsPoll.interval` seconds, on the same SSH connection when they share
a host.  :func:`summarize` turns a status report into what the strip shows: which layer answers,
the latest outcome and fate, and **attention** when something needs a look (a layer down, a job
that died or stalled, an attempt left open by a cockpit that is gone).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .config import Config

__all__ = ["TargetSummary", "summarize", "TargetsPoll"]

log = logging.getLogger(__name__)

#: fates of a passed job that need a look
_BAD_FATES = ("died", "diverged", "stalled", "vanished")


@dataclass
class TargetSummary:
    name: str
    reachable: bool | None = None  # None: not checked yet
    layer: str | None = None  # the layer that failed, when not reachable
    detail: str = ""
    attempt: int | None = None
    outcome: str | None = None
    fate: str | None = None
    attention: str = ""  # why this target needs a look ("" when it does not)
    checked_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def summarize(name: str, report: dict[str, Any]) -> TargetSummary:
    v = report.get("verdict") or {}
    bad = next((st for st in v.get("stages", []) if st.get("status") == "fail"), None)
    s = TargetSummary(name, reachable=bool(v.get("ok")), layer=v.get("layer") if bad else None,
                      detail=(bad or {}).get("detail", ""), checked_at=report.get("collected_at") or time.time())
    la = report.get("latest_attempt") or None
    if la:
        s.attempt, s.outcome = la.get("attempt"), la.get("outcome")
        s.fate = (la.get("fate") or {}).get("state")
    if bad:
        s.attention = f"{s.layer}: {s.detail}"
    elif s.fate in _BAD_FATES:
        s.attention = f"the job of #{s.attempt} {s.fate}"
    elif s.outcome == "interrupted":
        s.attention = f"#{s.attempt} was left open by a cockpit that is gone"
    return s


class TargetsPoll:
    """Checks every target (the selected one too: its strip entry is the same quick truth) every
    ``interval`` seconds, all at once; ``on_change`` gets the summaries in config order."""

    def __init__(self, cfg: Config, selected: str, on_change: Callable[[list[TargetSummary]], None], *, interval: float = 30.0) -> None:
        self.cfg = cfg
        self.selected = selected
        self.on_change = on_change
        self.interval = interval
        self.summaries = {n: TargetSummary(n) for n in cfg.target_names}
        self.rounds = 0
        self._engines: dict[str, Any] = {}

    def _engine(self, name: str) -> Any:
        """One engine per target, kept between rounds: its shell and the host's connection stay."""
        eng = self._engines.get(name)
        if eng is None:
            from .engine import Engine

            eng = self._engines[name] = Engine(self.cfg.for_target(name), recover=False)
        return eng

    async def close(self) -> None:
        engines, self._engines = list(self._engines.values()), {}
        for eng in engines:
            await eng.close()

    async def check(self, name: str) -> TargetSummary:
        from .status import collect_status

        try:
            # the selected target's job is followed by the app's own engine: only read its journal
            report = await collect_status(self.cfg.for_target(name), quick=True, engine=self._engine(name),
                                          reconcile=name != self.selected)
        except Exception as e:  # noqa: BLE001 - one target's trouble (a bad config, a bug) must not stop the others' watch: shown in its strip entry
            log.info("watching target %s failed", name, exc_info=True)
            return TargetSummary(name, reachable=False, layer="config", detail=str(e), attention=str(e), checked_at=time.time())
        return summarize(name, report)

    async def round(self) -> list[TargetSummary]:
        for s in await asyncio.gather(*(self.check(n) for n in self.summaries)):
            self.summaries[s.name] = s
        self.rounds += 1
        out = list(self.summaries.values())
        self.on_change(out)
        return out

    async def run(self) -> None:
        try:
            while True:
                await self.round()
                await asyncio.sleep(self.interval)
        finally:
            await self.close()
