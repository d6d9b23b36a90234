"""The faster edit → attempt loop: watch the deploy source, run an attempt when a save settles.

Asyncio and UI-free, one job per module:

:mod:`.source`
    which files of ``[deploy] source`` count (``[deploy] exclude``, ``.gitignore``, editor
    noise, cockpit's own output) and their content signatures.
:mod:`.watcher`
    :class:`SourceWatcher`: yields a debounced :class:`ChangeSet` once a burst of saves has been
    quiet for ``debounce`` seconds; only real content changes count.
:mod:`.attempts`
    :class:`AttemptLoop`: consumes the watcher and runs ``engine.attempt(note)``, one at a time,
    retrying a busy target.
:mod:`.notes`
    :class:`NoteCounter`: the note of each on-save attempt (``"idea (#3)"``).
:mod:`.from_config`
    :func:`watcher_for` and :func:`loop_config`: the above as the config describes them.

:class:`~cockpit.core.config.LoopConfig` is the ``[loop]`` config section.  The headless runner,
``cockpit watch``, lives in :mod:`cockpit.cli.watch`.
"""

from __future__ import annotations

from ..config import LoopConfig
from .attempts import AttemptLoop, NoteProvider, deployed_ok
from .from_config import loop_config, watcher_for
from .notes import NoteCounter, strip_counter
from .source import NOISE_DIRS, SourceFiles, is_editor_noise, is_excluded
from .watcher import ChangeSet, SourceWatcher

__all__ = [
    "LoopConfig",
    "loop_config",
    "ChangeSet",
    "SourceWatcher",
    "SourceFiles",
    "AttemptLoop",
    "NoteProvider",
    "NoteCounter",
    "NOISE_DIRS",
    "is_excluded",
    "is_editor_noise",
    "strip_counter",
    "deployed_ok",
    "watcher_for",
]
