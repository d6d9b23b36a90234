"""The ``cockpit`` command: one module per command group.

:mod:`.main` builds the parser and runs a sub-command; :mod:`.args` holds the global options
(the same meaning before or after the sub-command) and resolves the config; :mod:`.tui` opens the
screen; :mod:`.actions`, :mod:`.compare`, :mod:`.serve`, :mod:`.targets`, :mod:`.watch` and
:mod:`.live` are the command groups.  Everything here stands on :mod:`cockpit.core`.
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
