"""``cockpit status``: what is true about the target right now, layer by layer.

The connectivity stages come first (ssh reached → host answers → target shell answers → workdir
exists); when the target shell answers, the observation follows: the process table with its
findings (zombies and their parents, ``D`` states, the job's own processes), the GPUs, the current
attempt's log with its classified errors, and (for ``pct``) the host's kernel messages.  The report
is plain data (JSON-ready); every part carries ``collected_at`` so a reader can tell stale data.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .compile_report import alert_findings, summary_of
from .config import Config
from .connectivity import check_connectivity
from .fate_record import latest_fate
from .journal import as_read
from .layers import Status, Verdict
from .remote.base import RemoteError

if TYPE_CHECKING:  # pragma: no cover
    from .engine import Engine

__all__ = ["collect_status", "latest_attempt", "as_read", "compile_findings"]


def latest_attempt(eng: Engine) -> dict[str, Any] | None:
    """The newest attempt as ``status --json`` shows it: its outcome (never rewritten) and its fate."""
    attempts = eng.journal.attempts()
    if not attempts:
        return None
    rec = attempts[-1]
    fate = latest_fate(rec)
    outcome, summary = as_read(rec)
    layer = rec.layer_name
    return {"attempt": rec.attempt, "note": rec.note, "outcome": outcome.value, "layer": layer, "summary": summary,
            "first_error": rec.first_error, "fate": fate.to_dict() if fate else None}


def compile_findings(eng: Engine) -> list[dict[str, Any]]:
    """The latest attempt's torch.compile alerts (a recompile storm or limit hit, compiles on threads,
    a cold cache…) as findings with their advice: the live summary while its job is followed, else
    the journal's (docs/compile.md)."""
    attempts = eng.journal.attempts()
    if not attempts:
        return []
    rec = attempts[-1]
    live = eng.compile.summary(rec.attempt)
    # a follower this process just started has read nothing yet: the journal's summary until it has
    summary = live if live is not None and live.events else (summary_of(rec.compile) or live)
    return [f.to_dict() for f in alert_findings(summary, rec.attempt)] if summary is not None else []


async def collect_status(cfg: Config, *, quick: bool = False, engine: Engine | None = None, reconcile: bool = True) -> dict[str, Any]:
    """The report (see the module doc).  ``engine``: one kept between calls (the target strip's
    watch: its connection and session stay), else one made and closed here; ``reconcile=False``:
    only read the journal (another engine in this process follows that target's job)."""
    from .engine import Engine  # here: ``history`` reads as_read without the engine's import cost

    eng = engine if engine is not None else Engine(cfg, recover=False)  # status only reads: it never closes attempts in the journal
    try:
        verdict = Verdict("status")
        await check_connectivity(eng.transport, cfg, verdict)
        verdict.finish()
        report: dict[str, Any] = {
            "ok": verdict.ok,
            "target": cfg.display_name,
            "transport": eng.transport.description,
            "collected_at": time.time(),
            "verdict": verdict.to_dict(),
            "job": eng.job.to_dict() if eng.job else None,
        }
        shell_ok = any(s.name == "target shell answers" and s.status is Status.OK for s in verdict.stages)
        if shell_ok and reconcile:
            try:
                await eng.reconcile()  # a passed attempt whose job died since is recorded as such now
            except RemoteError as e:
                report["reconcile_error"] = e.message
        report["latest_attempt"] = latest_attempt(eng)
        if shell_ok and not quick:
            obs = eng.observer
            if engine is None:  # one refresh, then closed: no stream is worth starting (it polls)
                obs.streams.enabled = False
            await obs.refresh_all()
            report.update(obs.to_dict())
        else:
            report["findings"] = []
        report["findings"] = list(report.get("findings") or []) + compile_findings(eng)
        return report
    finally:
        if engine is None:
            await eng.close()
