"""What a notification says: one engine event as a small JSON object, **schema 1**.

The same object goes on the ``[notify] command``'s stdin and, with ``text`` escaped for Slack, is
the ``[notify] webhook``'s POST body.  Keys are snake_case and stable: a new key may be added, a
key is never renamed or removed without bumping ``schema``.  Every string in it has gone through
the notifier's ``redact`` function and is one line without control characters.

============== ===========================================================================
``schema``     1
``event``      ``verdict`` (an attempt finished), or the fate of a passed attempt's job:
               ``died``, ``vanished``, ``stalled``, ``finished``
``text``       one line for people: ``cockpit [gpu-box]: attempt 4 FAILED (app): RuntimeError: …``
``target``     the target's name (``[target] name``, else its host)
``attempt``    the attempt number (as in ``cockpit history``)
``outcome``    the attempt's verdict: ``passed``, ``failed``, ``untested``, ``interrupted``
               (for a fate event: the outcome it had, never rewritten)
``layer``      the failure layer of the event (``config`` … ``app``), or null
``summary``    the verdict's summary, or the story ``passed → died (app) after 4m12s: …``
``first_error`` the label of the first error's signature (``FX/dynamo race``), or null
``error``      the first line to read: the error line, the failing stage, or the fate's cause
``fate``       null for a verdict; else ``{state, layer, cause, after_s, last_progress}``
``note``       the attempt's hypothesis
``trigger``    what started the attempt: ``manual``, ``on-save``, ``cli`` (null for a fate)
``duration_s`` the attempt's duration in seconds (null for a fate)
``at``         when the event happened, seconds since the epoch (float)
``at_iso``     the same in ISO 8601, UTC (``2025-05-01T12:00:00Z``)
``suppressed`` notifications dropped by the rate limit since the previous one sent
``cockpit_version`` the cockpit that sent it
============== ===========================================================================
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from ... import __version__
from ..actions.jobrecord import redact_evidence
from ..config.notify import DEFAULT_ON, EVENT_KINDS, FATE_KINDS
from ..events import ActionFinished, Event, FateChanged
from ..fate_record import story
from ..layers import Evidence
from .terminal import error_text, one_line, verdict_line

__all__ = ["SCHEMA_VERSION", "EVENT_KINDS", "DEFAULT_ON", "FATE_KINDS", "event_kind", "build_payload", "redact_payload",
           "slack_body", "mask_url", "env_redactor", "wanted"]

SCHEMA_VERSION = 1
#: fate states of a passed attempt's job that can notify
#: what ``[notify] on`` may name: every verdict, only the verdicts that did not pass, and the fates

_LIMIT = 300
#: terminal escape sequences (CSI, OSC, two-byte ESC): removed whole, not shown as "[31m"
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")


def event_kind(ev: Event) -> str | None:
    """``verdict`` for an attempt's verdict, the fate state for a passed attempt's job that
    died, vanished, stalled or finished; None for everything else (stages, other actions, a
    failed attempt's job ending, a job cockpit stopped)."""
    if isinstance(ev, ActionFinished):
        return "verdict" if ev.result is not None else None
    if isinstance(ev, FateChanged) and ev.outcome == "passed" and ev.fate.state in FATE_KINDS:
        return ev.fate.state
    return None


def wanted(kind: str, outcome: str | None, on: tuple[str, ...] | list[str]) -> bool:
    """Whether ``[notify] on`` asks for this event (``failed`` selects the verdicts that did not pass)."""
    if kind == "verdict":
        return "verdict" in on or ("failed" in on and outcome != "passed")
    return kind in on


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"


def _clean(v: Any) -> Any:
    """``v`` with every escape sequence removed from its strings."""
    if isinstance(v, str):
        return _ANSI.sub("", v)
    if isinstance(v, Mapping):
        return {k: _clean(x) for k, x in v.items()}
    return v


def _line(s: Any, limit: int = _LIMIT) -> str | None:
    if s is None:
        return None
    s = one_line(_clean(str(s)), limit)
    return s or None


def build_payload(ev: Event, *, target: str, note: str = "", now: float | None = None) -> dict[str, Any] | None:
    """The schema-1 object for ``ev`` (None when ``ev`` is not a notification, see :func:`event_kind`)."""
    kind = event_kind(ev)
    if kind is None:
        return None
    at = time.time() if now is None else now
    prefix = f"cockpit [{one_line(target, 60)}]"
    p: dict[str, Any] = {"schema": SCHEMA_VERSION, "event": kind, "text": "", "target": target}
    if isinstance(ev, ActionFinished):
        res = ev.result
        assert res is not None
        fe = _clean(res.first_error) if isinstance(res.first_error, Mapping) else None
        summary = _clean(res.verdict.summary())
        d = {"attempt": res.attempt, "outcome": res.outcome.value, "layer": res.verdict.layer.value if res.verdict.layer else None,
             "summary": summary, "first_error": fe}
        p.update(text=verdict_line(d, prefix=prefix, limit=_LIMIT), attempt=res.attempt, outcome=d["outcome"], layer=d["layer"],
                 summary=_line(summary), first_error=_line(fe.get("label")) if fe else None, error=_line(error_text(d)),
                 fate=None, note=_line(note) or "", trigger=ev.trigger, duration_s=round(ev.duration_s, 2))
    else:
        assert isinstance(ev, FateChanged)
        told = story(ev.outcome, None, dataclasses.replace(ev.fate, cause=_clean(ev.fate.cause)))
        fate = ev.fate.to_dict()
        fate.pop("at", None)
        fate["cause"] = _line(fate.get("cause"), 500) or ""
        fate["last_progress"] = _line(fate.get("last_progress"), 200)
        p.update(text=one_line(f"{prefix}: attempt {ev.attempt} {told}", _LIMIT), attempt=ev.attempt, outcome=ev.outcome,
                 layer=ev.fate.layer, summary=_line(told), first_error=None, error=_line(ev.fate.cause), fate=fate,
                 note=_line(note) or "", trigger=None, duration_s=None)
        at = ev.fate.at or at
    p.update(at=round(at, 3), at_iso=_iso(at), suppressed=0, cockpit_version=__version__)
    return p


def redact_payload(p: Any, redact: Callable[[str], str]) -> Any:
    """``p`` with ``redact`` applied to every string in it (keys are ours and stay)."""
    if isinstance(p, str):
        return redact(p)
    if isinstance(p, Mapping):
        return {k: redact_payload(v, redact) for k, v in p.items()}
    if isinstance(p, (list, tuple)):
        return [redact_payload(v, redact) for v in p]
    return p


def slack_body(p: Mapping[str, Any]) -> dict[str, Any]:
    """The webhook's body: the payload with ``text`` first and escaped the way Slack asks
    (``&``, ``<``, ``>``), so a log line cannot ping ``<!channel>`` or forge a link."""
    text = str(p.get("text") or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return {"text": text, **{k: v for k, v in p.items() if k != "text"}}


def mask_url(url: str) -> str:
    """What may be shown of a webhook URL: its scheme and host (``https://hooks.slack.com/***``);
    the path and query hold the token."""
    try:
        u = urlsplit(url)
        host = u.hostname or ""
        port = f":{u.port}" if u.port else ""
    except ValueError:
        return "***"
    if not u.scheme or not host:
        return "***"
    return f"{u.scheme}://{host}{port}/***"


def env_redactor(env: Mapping[str, str]) -> Callable[[str], str]:
    """The values of secret-named ``[job.env]`` keys hidden as ``***``: the hiding the launch
    evidence already gets (:func:`cockpit.core.actions.jobrecord.redact_evidence`), as a string function."""
    env_ = dict(env)

    def redact(text: str) -> str:
        return redact_evidence(Evidence(command=text), env_).command

    return redact
