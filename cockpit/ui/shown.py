"""What the screen may show of remote, job and journal text: the one door from data to display text.

Every pane and screen turns such text into display text here (table cells, one-line details, the
live log, evidence, tracebacks, stack dumps, findings, GPU process names, toasts): escape and
control sequences are removed (:func:`~cockpit.core.text.sanitize`) and, in share mode
(``cockpit --share``), secrets are replaced by ``***`` with the config's
:class:`~cockpit.core.redact.Redactor`.  The app sets the redactor when it is built
(:func:`set_share`); it lives in a context variable, like Textual's own active app, so every task
of that app sees it and a test's next app starts clean.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar

from ..core.redact import LineRedactor, Redactor
from ..core.text import sanitize  # a carriage return shows (␍): display text is data, not a progress bar

__all__ = ["set_share", "sharing", "shown", "shown_block", "line_redactor"]

_SHARE: ContextVar[Redactor | None] = ContextVar("cockpit_share_redactor", default=None)


def set_share(redactor: Redactor | None) -> None:
    """Share mode on (with this redactor) or off (None) for the app being built and its tasks."""
    _SHARE.set(redactor)


def sharing() -> Redactor | None:
    return _SHARE.get()


def shown(text: object) -> str:
    """One line of remote text as it may be shown (a ``\\n`` becomes a visible mark)."""
    s = sanitize(str(text))
    red = _SHARE.get()
    return red.text(s) if red is not None else s


def shown_block(text: object) -> str:
    """Several lines (a traceback, a stack dump, evidence output) as they may be shown."""
    s = str(text)
    red = _SHARE.get()
    if red is not None:
        s = red.text(s)  # whole: a PEM block spans lines
    return "\n".join(sanitize(line) for line in s.split("\n"))


def line_redactor() -> LineRedactor | None:
    """For a stream of log lines in share mode (a PEM key's body spans lines); None otherwise."""
    red = _SHARE.get()
    return LineRedactor(red) if red is not None else None


def shown_lines(lines: Iterable[str]) -> list[str]:
    red = line_redactor()
    return [red(line) for line in lines] if red is not None else list(lines)
