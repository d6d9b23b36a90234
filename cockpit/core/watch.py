"""The edit → attempt loop's public names, where they were first imported from.

The code lives in :mod:`cockpit.core.loop` (source filter, watcher, attempt loop, notes);
this module only re-exports it, so ``from cockpit.core.watch import AttemptLoop`` keeps working.
"""

from __future__ import annotations

from .loop import (
    NOISE_DIRS,
    AttemptLoop,
    ChangeSet,
    LoopConfig,
    NoteCounter,
    NoteProvider,
    SourceWatcher,
    deployed_ok,
    is_editor_noise,
    is_excluded,
    loop_config,
    strip_counter,
    watcher_for,
)

__all__ = [
    "LoopConfig",
    "loop_config",
    "ChangeSet",
    "SourceWatcher",
    "AttemptLoop",
    "NoteCounter",
    "is_excluded",
    "is_editor_noise",
    "strip_counter",
    "deployed_ok",
    "watcher_for",
    "NOISE_DIRS",
    "NoteProvider",
]
