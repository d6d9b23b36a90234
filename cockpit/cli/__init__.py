"""The ``cockpit`` command: one module per command group.

:mod:`.main` builds the parser and runs a sub-command; :mod:`.args` holds the global options
(the same meaning before or after the sub-command) and resolves the config; :mod:`.common` what
every sub-command shares (exit codes, output, the engine session); :mod:`.progress` shows an
action's stages live on stderr; :mod:`.tui` opens the screen; :mod:`.actions` (``run-action``),
:mod:`.compare`, :mod:`.serve`, :mod:`.targets` (``--all``, groups), :mod:`.watch` (attempt on
save, headless) and :mod:`.discover` (``init``) are the command groups.  Everything here stands
on :mod:`cockpit.core` (and :mod:`cockpit.ui` for the screen).
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
