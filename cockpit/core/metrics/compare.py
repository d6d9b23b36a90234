"""Two attempts side by side, as plain data (``cockpit compare A B``).

:func:`compare` gathers, for attempts A and B of one journal: each one's hypothesis, outcome and
fate, code version, first error and metrics summary; what changed in the deployed code from A to B
(their stored snapshots diffed, :mod:`cockpit.core.changes`); and, for the chosen metrics (the
loss by default), both values at steps both attempts reached (:func:`.report.at_steps`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..changes import diff_manifests, load_manifest, summarise
from ..compile_report import compare_cell
from ..fate_record import story
from ..journal import AttemptRecord, Journal
from ..journal.export import _code_cell, _first_error_line
from ..redact import Redactor
from .report import at_steps, primary, summary
from .store import MetricsStore

__all__ = ["compare", "NoSuchAttempt"]


class NoSuchAttempt(LookupError):
    """An attempt id the journal does not hold (the message lists the ones it does)."""


def _side(rec: AttemptRecord, store: MetricsStore) -> dict[str, Any]:
    outcome, layer = rec.outcome.value, rec.layer_name
    return {
        "attempt": rec.attempt, "note": rec.note, "outcome": outcome, "layer": layer, "fate": rec.fate,
        "story": story(outcome, layer, rec.fate, short=True), "code": _code_cell(rec.code_version).strip("`"),
        "code_version": rec.code_version, "started_at": rec.started_at, "duration_s": rec.duration_s,
        "first_error": _first_error_line(rec.first_error) or None,
        # what ended or stopped the job after the verdict (a fate of died, diverged or stalled), for
        # an attempt whose verdict saw no error: the error row is then not an empty "—"
        "fate_error": _fate_error(rec.fate),
        "metrics": summary(store.get(rec.attempt), store.total_steps),
        # torch.compile's summary (the journal's latest) and its one-cell form for the compile row
        "compile": (rec.compile or {}).get("totals") if rec.compile else None,
        "compile_cell": compare_cell(rec.compile) if rec.compile else None,
    }


def _fate_error(fate: dict[str, Any] | None) -> str | None:
    if not fate or fate.get("state") not in ("died", "diverged", "stalled") or not fate.get("cause"):
        return None
    return str(fate["cause"])[:160]


def _changes(journal_dir: Path, a: int, b: int) -> dict[str, Any] | None:
    """What the deployed code changed from A to B (None when either has no stored snapshot)."""
    old, new = load_manifest(journal_dir, a), load_manifest(journal_dir, b)
    if old is None or new is None:
        return None
    d, _ = diff_manifests(journal_dir, old, new)
    d["base"], d["attempt"] = a, b
    return {"from": a, "to": b, "files": d["files"], "added": d["added"], "removed": d["removed"],
            "summary": summarise(d), "changes": [{k: c.get(k) for k in ("path", "status", "added", "removed", "binary")}
                                                 for c in d["changes"]]}


def compare(journal: Journal, store: MetricsStore, a: int, b: int, *, metrics: list[str] | None = None, steps: int = 5,
            redactor: Redactor | None = None) -> dict[str, Any]:
    """Attempts ``a`` and ``b`` side by side (see the module doc); NoSuchAttempt for an unknown id."""
    recs = {r.attempt: r for r in journal.attempts(redactor)}
    for n in (a, b):
        if n not in recs:
            known = f"{min(recs)}–{max(recs)}" if recs else "none yet"
            raise NoSuchAttempt(f"no attempt {n} in {journal.path} (attempts: {known})")
    ma, mb = store.get(a), store.get(b)
    common = [n for n in ma.names() if n in mb.series] if ma is not None and mb is not None else []
    chosen = list(metrics) if metrics else ([p] if (p := primary(common)) else [])
    matching: dict[str, Any] = {}
    for name in chosen:
        if ma is not None and mb is not None and name in ma.series and name in mb.series:
            matching[name] = at_steps(ma.series[name], mb.series[name], steps)
        else:
            matching[name] = []
    return {"a": _side(recs[a], store), "b": _side(recs[b], store), "changes": _changes(Path(journal.path).parent, a, b),
            "common_metrics": common, "matching": matching}
