"""The one table of what cockpit can do to a target.

Each :class:`ActionSpec` is an action of the engine: its id (the CLI sub-command, the engine's
``run_action`` name, the ``[keymap]`` id of its binding), a short label (footer, palette), the
help text (CLI ``--help``, help screen, palette), whether it is destructive (kills processes: the
TUI confirms it, showing the exact command) and what the confirmation is about.  The CLI builds its
sub-commands from this table, the engine dispatches on it, and the TUI's registry
(:mod:`cockpit.core.keymap`) takes label, help and the destructive flag from it and adds only keys.

The user's own ``[[actions]]`` join the table per config (:func:`specs_for`): the same fields, with
``user`` set and their own key; ``cockpit run-action NAME`` and ``Engine.run_user_action`` run them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["ActionSpec", "TABLE", "BY_ID", "SINGLE_ACTIONS", "user_specs", "specs_for"]


@dataclass(frozen=True)
class ActionSpec:
    id: str
    label: str
    help: str
    destructive: bool = False
    #: what the confirmation dialog is about (destructive actions)
    confirm: str = ""
    #: one of the user's ``[[actions]]`` (run by ``Engine.run_user_action``), not a built-in
    user: bool = False
    #: a user action's key (built-ins get theirs from the TUI's registry)
    key: str = ""
    #: where a user action runs: "target" or "host"
    where: str = ""


TABLE: tuple[ActionSpec, ...] = (
    ActionSpec("attempt", "Attempt",
               "Try a fix: deploy → stop (and strays) → clear caches → launch → verify until healthy; recorded in the journal with its fate"),
    ActionSpec("deploy", "Deploy", "Copy [deploy] source into the target (creating it) and verify every file's checksum"),
    ActionSpec("clear-cache", "Clear cache", "Remove the [cache] paths (compile caches) and verify they are gone",
               confirm="Clear the compile caches?"),
    ActionSpec("verify", "Verify", "Judge the job as it is now: alive, log, progress, no error in any thread; a dead job fails with its cause"),
    ActionSpec("launch", "Launch", "Start [job] command with a new log file (no verify)"),
    ActionSpec("relaunch", "Relaunch", "Stop the job, launch it again with a new log, verify it", destructive=True,
               confirm="Relaunch the job?"),
    ActionSpec("stop", "Stop", "Stop the job cockpit launched: TERM, then KILL, then check nothing is left; then look for strays",
               destructive=True, confirm="Stop the job?"),
    ActionSpec("reboot", "Reboot", "Reboot the container (pct reboot; docker/podman restart) and verify a clean process table: the cure for zombies PID 1 never reaps",
               destructive=True, confirm="Reboot the container?"),
)

BY_ID: dict[str, ActionSpec] = {a.id: a for a in TABLE}

#: the actions ``Engine.run_action`` runs (every one but the attempt, which takes a note)
SINGLE_ACTIONS: tuple[str, ...] = tuple(a.id for a in TABLE if a.id != "attempt")


class UserAction(Protocol):
    """One of a config's ``[[actions]]`` (:class:`cockpit.core.config.actions.ActionConfig`), as this
    table reads it: described, not imported, since the config's checks read this table (the config
    sits under the core)."""

    @property
    def name(self) -> str: ...
    @property
    def help(self) -> str: ...
    @property
    def command(self) -> str: ...
    @property
    def where(self) -> str: ...
    @property
    def destructive(self) -> bool: ...
    @property
    def key(self) -> str: ...


class WithActions(Protocol):
    """A config, as :func:`specs_for` reads it: its ``[[actions]]``."""

    @property
    def actions(self) -> Iterable[UserAction]: ...


def user_specs(actions: Iterable[UserAction]) -> tuple[ActionSpec, ...]:
    """The ``[[actions]]`` of a config as table entries (label: the name; help: theirs, else the command)."""
    out = []
    for a in actions:
        where = "on the host" if a.where == "host" else "in the target"
        out.append(ActionSpec(a.name, a.name, a.help or f"{where}: {a.command}", destructive=a.destructive,
                              confirm=f"Run {a.name}?", user=True, key=a.key, where=a.where))
    return tuple(out)


def specs_for(cfg: WithActions) -> tuple[ActionSpec, ...]:
    """Every action of this config's target: the built-ins, then the user's own."""
    return TABLE + user_specs(cfg.actions)
