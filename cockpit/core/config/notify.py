"""``[notify]``'s event kinds and its checks beyond types (called by :mod:`.load`): each
problem is a :class:`~cockpit.core.config.ConfigError` naming the file, the key and the fix.  A webhook
URL is never echoed in an error: it holds a token."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import ConfigError

__all__ = ["check_notify", "FATE_KINDS", "EVENT_KINDS", "DEFAULT_ON"]

#: the fates of a passed attempt's job that notify (:mod:`cockpit.core.notify.payload`)
FATE_KINDS = ("died", "diverged", "vanished", "stalled", "finished")
#: every event a notification can be about
EVENT_KINDS = ("verdict", "failed", *FATE_KINDS)
#: ``[notify] on`` when the file does not say
DEFAULT_ON = ("verdict", "died", "diverged", "vanished", "stalled")


def check_notify(n: Any, path: Path | None) -> None:
    """Validate (and normalise) a :class:`~cockpit.core.config.NotifyConfig` in place."""
    for i, kind in enumerate(n.on):
        if kind not in EVENT_KINDS:
            close = difflib.get_close_matches(kind, EVENT_KINDS, n=1, cutoff=0.5)
            hint = f"did you mean \"{close[0]}\"? " if close else ""
            raise ConfigError(path, f"notify.on[{i}]", f"{kind!r} is not an event cockpit notifies",
                              hint + "use any of " + ", ".join(f'"{k}"' for k in EVENT_KINDS))
    cmd = n.command
    if cmd is not None and not (cmd.strip() if isinstance(cmd, str) else cmd and cmd[0].strip()):
        raise ConfigError(path, "notify.command", "is empty",
                          "give a command, e.g. command = [\"notify-send\", \"cockpit\"], or remove the key")
    if n.webhook is not None:
        url = n.webhook.strip()
        if any(c.isspace() or not c.isprintable() for c in url):
            raise ConfigError(path, "notify.webhook", "holds a space or a control character (the value is not shown: it may hold a token)",
                              "paste the URL on one line, without spaces (percent-encode them as %20)")
        try:
            u = urlsplit(url)
            scheme, host = u.scheme, u.hostname
            u.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            scheme, host = "", None
        if scheme not in ("http", "https") or not host:
            found = f"its scheme is {scheme!r}" if scheme and scheme not in ("http", "https") else "it does not start with http:// or https:// and a host"
            raise ConfigError(path, "notify.webhook", f"is not an http(s) URL: {found} (the value is not shown: it may hold a token)",
                              "paste the whole URL your chat service gave you, e.g. webhook = \"https://hooks.slack.com/services/…\"")
        n.webhook = url
