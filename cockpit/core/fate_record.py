"""An attempt's fate as the journal keeps it: the record and the words for it.

The states and how a job reaches each are :mod:`cockpit.core.fate`'s (its module doc); this module
holds only what reading a journal needs (:class:`Fate`, :func:`latest_fate`, :func:`fate_text`,
:func:`story`), so ``cockpit history``, the Markdown export and the notifications read fates without
importing the follower and the judges behind it (the actions, the log scanner, the classifier).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .probes.text import fmt_secs

__all__ = ["FATE_EVENT", "FATE_STATES", "FINAL_STATES", "Fate", "fate_text", "latest_fate", "story"]

FATE_STATES = ("running", "pending", "stalled", "finished", "died", "diverged", "stopped", "vanished")
FINAL_STATES = ("finished", "died", "diverged", "stopped", "vanished")


@dataclass(frozen=True)
class Fate:
    """One fate reading, as journalled (``history --json``'s ``fate`` object)."""

    state: str
    layer: str | None = None
    cause: str = ""
    at: float = 0.0
    after_s: float | None = None
    last_progress: str | None = None

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["after_s"] is not None:
            d["after_s"] = round(d["after_s"], 2)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Fate | None:
        if not isinstance(d, dict) or d.get("state") not in FATE_STATES:
            return None
        after = d.get("after_s")
        return cls(str(d["state"]), d.get("layer") if isinstance(d.get("layer"), str) else None, str(d.get("cause") or ""),
                   float(d.get("at") or 0.0), float(after) if isinstance(after, (int, float)) else None,
                   d.get("last_progress") if isinstance(d.get("last_progress"), str) else None)


def fate_text(fate: Fate | dict[str, Any] | None, *, short: bool = False) -> str:
    """``died (app) after 4m12s: RuntimeError …`` / ``running`` / ``stopped after 2m: by cockpit``;
    ``short`` leaves the cause out."""
    f = fate if isinstance(fate, Fate) or fate is None else Fate.from_dict(fate)
    if f is None:
        return ""
    if f.state == "running":  # its layer is set only when a GPU failed under it (:mod:`.actions.gpufault`)
        return "running" if not f.layer else f"running, but a {f.layer} fault" + (f": {f.cause}" if f.cause and not short else "")
    head = f.state + (f" ({f.layer})" if f.layer and f.state in ("died", "diverged", "vanished", "stalled") else "")
    if f.after_s is not None:
        head += f" after {fmt_secs(f.after_s)}"
    return head + (f": {f.cause}" if f.cause and not short else "")


FATE_EVENT = "fate"


def same_fate(a: Fate | None, b: Fate) -> bool:
    """``b`` tells nothing new after ``a``: the same state (and, running, the same layer: a GPU that
    failed under a running job is news)."""
    return a is not None and a.state == b.state and (a.state != "running" or a.layer == b.layer)


def latest_fate(rec: Any) -> Fate | None:
    """The fate of a journal :class:`~cockpit.core.journal.AttemptRecord` (its latest, or its final one)."""
    return Fate.from_dict(getattr(rec, "fate", None))


def story(outcome: Any, layer: Any, fate: Fate | dict[str, Any] | None, *, short: bool = False) -> str:
    """An attempt's outcome and the end of its job's story: ``passed → died (app) after 4m12s: …``."""
    o = str(getattr(outcome, "value", outcome) or "?")
    lay = getattr(layer, "value", layer)
    head = o + (f" ({lay})" if lay and o in ("failed", "untested") else "")
    tail = fate_text(fate, short=short)
    return f"{head} → {tail}" if tail else head
