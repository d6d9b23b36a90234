"""Plain-text renderings that every front end shares: the glyph of a stage status and of an
outcome, the phrase that keeps ``failed`` and ``untested`` apart, and a verdict as the lines the
CLI prints and ``y`` copies.  Plain strings only (no terminal styling), so the CLI, the TUI and
the journal's exports cannot word the same thing two ways."""

from __future__ import annotations

from enum import Enum
from typing import Any

from .layers import Layer, Outcome, Status

__all__ = ["STATUS_GLYPH", "OUTCOME_GLYPH", "OUTCOME_MEANING", "outcome_label", "render_verdict"]

#: one glyph per stage status
STATUS_GLYPH: dict[str, str] = {
    Status.OK.value: "✔",
    Status.FAIL.value: "✘",
    Status.PENDING.value: "…",
    Status.RUNNING.value: "▶",
    Status.SKIPPED.value: "–",
    Status.NOT_REACHED.value: "⊘",
}

#: one glyph per attempt outcome
OUTCOME_GLYPH: dict[str, str] = {
    Outcome.PASSED.value: "✔",
    Outcome.FAILED.value: "✘",
    Outcome.UNTESTED.value: "⊘",
    Outcome.INTERRUPTED.value: "■",
    Outcome.RUNNING.value: "▶",
    Outcome.PENDING.value: "…",
}

#: what each outcome means, in the words every front end uses
OUTCOME_MEANING: dict[str, str] = {
    Outcome.PASSED.value: "the code ran and reached its marker",
    Outcome.FAILED.value: "the code ran and failed",
    Outcome.UNTESTED.value: "the fix never ran",
    Outcome.INTERRUPTED.value: "cockpit stopped before a verdict",
    Outcome.RUNNING.value: "no verdict yet",
    Outcome.PENDING.value: "queued by the scheduler, not verified yet",
}


def _value(v: Outcome | Layer | str | None) -> str:
    return "" if v is None else str(v.value if isinstance(v, Enum) else v)


def outcome_label(outcome: Outcome | str, layer: Layer | str | None = None) -> str:
    """A short phrase that keeps ``failed`` and ``untested`` visibly apart:
    ``untested — the fix never ran (ssh failed)``."""
    o, lay = _value(outcome), _value(layer)
    meaning = OUTCOME_MEANING.get(o)
    if meaning is None:
        return f"{o} — unknown outcome"
    tail = ""
    if lay and o == Outcome.FAILED.value:
        tail = f" ({lay})"
    elif lay and o == Outcome.UNTESTED.value:
        tail = f" ({lay} failed)"
    return f"{o} — {meaning}{tail}"


def render_verdict(v: dict[str, Any]) -> str:
    """A verdict (its ``to_dict()``) as text: the action and its result, one line per stage."""
    lines = [f"{v['action']}: {'OK' if v['ok'] else ('FAILED at layer ' + str(v['layer']) if v['layer'] else 'PENDING')}"]
    for st in v["stages"]:
        g = STATUS_GLYPH.get(st["status"], "?")
        lines.append(f"  {g} [{st['layer']:<9}] {st['name']:<22} {st['status']:<11} {st['detail']}")
        if st["status"] == "fail" and st.get("advice"):
            lines.append(f"      advice: {st['advice']}")
    return "\n".join(lines)
