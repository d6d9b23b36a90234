"""The edit → attempt loop's public names, where they were first imported from.

The code lives in :mod:`cockpit.core.loop` (source filter, watcher, attempt loop, notes);
this module only re-exports it, so ``from cockpit.core.watch import AttemptLoop`` keeps working.
"""

from __future__ import annotations

from .loop import *  # noqa: F403  (every public name of the loop package)
from .loop import __all__ as __all__
