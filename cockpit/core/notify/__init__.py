"""Notifications that reach you: the terminal bell and tmux (:mod:`.terminal`), a local command and
a webhook (:mod:`.hooks`) with one JSON schema (:mod:`.payload`), and the :class:`Notifier` that
subscribes to the engine and decides what goes where (:mod:`.notifier`).

The names that lived in the former ``cockpit/core/notify.py`` import from here as before.
"""

from __future__ import annotations

from .notifier import COLLAPSE_S, Notifier
from .payload import DEFAULT_ON, EVENT_KINDS, SCHEMA_VERSION, build_payload, env_redactor, event_kind, mask_url, slack_body
from .terminal import TMUX_OPTION, error_text, notify_verdict, notify_verdict_async, terminal_notify, verdict_line

__all__ = ["notify_verdict", "notify_verdict_async", "terminal_notify", "verdict_line", "error_text", "TMUX_OPTION",
           "Notifier", "COLLAPSE_S", "SCHEMA_VERSION", "EVENT_KINDS", "DEFAULT_ON", "build_payload", "event_kind",
           "env_redactor", "mask_url", "slack_body"]
