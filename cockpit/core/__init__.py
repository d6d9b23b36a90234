"""The core: everything cockpit knows about a target, with no UI in it (a test proves no Textual or
Rich import reaches it).

What lives here, and what it may import:

``engine.py``       the one door: one :class:`~.engine.Engine` per target owns the connection, the
                    observer, the attempt loop's engine side, the job and its fate, and the journal;
                    it speaks in typed events (``events.py``).
``face.py``         :class:`~.face.EngineFace`: exactly what the front ends use of the engine (a
                    protocol the engine satisfies, checked statically); the TUI is typed against it.
``config/``         the config file: its sections, schema, checks and loading.
``keymap.py``       the one registry of keys (plain data; the TUI makes its bindings from it).
``notify/``         verdicts and fate news as bell, tmux, command and webhook notifications.
``action_table.py`` the one table of actions (id, label, help, destructive, confirm text).
``attempt.py``      the attempt sequence; ``fate.py`` what became of a job after its verdict.
``actions/``        deploy, clear caches, stop, launch, verify, reboot, strays: each builds a verdict.
``user_actions.py`` the user's ``[[actions]]``: run one, its verdict and its own answer;
                    ``user_template.py`` their fields, checks and shell-quoting.
``remote/``         transports (SSH, local), the persistent framed session, runtimes.
``probes/``         parsers: ps, nvidia-smi, logs, kernel messages, signatures → typed data.
``journal/``        the append-only attempt journal: store, records, export.
``loop/``, ``changes/``, ``reload.py``, ``fswatch.py``   the edit → attempt loop and live reload.
``layers.py``       the vocabulary: layers, stages, verdicts, outcomes, findings.

This package is the public face: ``from cockpit.core import Engine, EngineFace, Verdict, …``
(``__all__``: the engine and its face, the events, the verdict vocabulary, the config).  The names
are loaded lazily, on first use, so importing any core submodule stays cheap.  Front ends import
these names and the plain data types; nothing deeper is needed.

Imports run one way: ``layers`` ← ``probes``/``remote`` ← ``actions`` ← ``attempt``/``fate`` ←
``engine``.  Nothing in ``core`` imports ``cockpit.ui`` or ``cockpit.cli``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what mypy sees; at run time each name is imported on first use (__getattr__)
    from .config import Config, load_config
    from .engine import Engine
    from .events import ActionFinished, ActionStarted, Event, FateChanged, StageProgress, Subscriber
    from .face import EngineFace
    from .fate_record import Fate
    from .layers import Layer, Outcome, Verdict

#: each public name → the submodule that defines it
_WHERE = {
    "Engine": "engine",
    "EngineFace": "face",
    "StageProgress": "events", "ActionStarted": "events", "ActionFinished": "events", "FateChanged": "events",
    "Event": "events", "Subscriber": "events",
    "Verdict": "layers", "Outcome": "layers", "Layer": "layers",
    "Fate": "fate",
    "Config": "config", "load_config": "config",
}

__all__ = ["Engine", "EngineFace", "StageProgress", "ActionStarted", "ActionFinished", "FateChanged", "Event", "Subscriber",
           "Verdict", "Outcome", "Layer", "Fate", "Config", "load_config"]


def __getattr__(name: str) -> object:
    # what :func:`.lazyface.face_getattr` does for the packages inside, written here so that
    # importing the core's face loads no module of the core at all
    where = _WHERE.get(name)
    if where is None:  # not a public name: a submodule (``from cockpit.core import journal``) is imported as usual
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value  # once: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
