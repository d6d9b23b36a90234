"""The one registry of user actions: it drives the bindings, the footer, the help screen and the
command palette, so they can never disagree.

Each :class:`UIAction` has a stable ``id`` (the key users write in ``[keymap]``), a default key
(Textual key names; several separated by commas), a short ``description`` (footer), a longer
``help`` (help screen, palette), and two flags: ``acts`` (it changes or enters the target, so
``--read-only`` disables it) and ``destructive`` (it kills processes: a confirmation modal shows
the exact command first).  No destructive action sits on a bare home-row key
(``a s d f g h j k l ;``), and nothing uses ``ctrl+a``/``ctrl+b`` (tmux prefixes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual.binding import Binding

__all__ = ["UIAction", "ACTIONS", "BY_ID", "bindings", "HOME_ROW", "acting_action_names"]

HOME_ROW = frozenset("asdfghjkl;") | {"semicolon"}


@dataclass(frozen=True)
class UIAction:
    id: str
    key: str
    action: str
    description: str
    help: str
    acts: bool = False
    destructive: bool = False
    footer: bool = False
    key_display: str | None = None
    demo_only: bool = False
    #: the engine call it makes: an action name for ``Engine.run_action``, ``attempt``, or None
    engine: str | None = None

    @property
    def keys(self) -> list[str]:
        return [k.strip() for k in self.key.split(",") if k.strip()]

    def binding(self) -> Binding:
        return Binding(self.key, self.action, self.description, show=self.footer, key_display=self.key_display,
                       tooltip=self.help, id=self.id)


ACTIONS: list[UIAction] = [
    # -- acting on the target ---------------------------------------------------------------
    UIAction("attempt", "t", "attempt", "Attempt", "Try a fix: asks for the hypothesis, then deploy → clear caches → stop → launch → verify; recorded in the journal",
             acts=True, footer=True, engine="attempt"),
    UIAction("attempt-on-save", "A", "attempt_on_save", "On save",
             "Toggle attempt on save: when a save in [deploy] source settles, attempt with the last hypothesis (a try counter is added); "
             "a save during an attempt queues one more", acts=True),
    UIAction("deploy", "D", "deploy", "Deploy", "Copy [deploy] source into the target and verify every file's checksum", acts=True, engine="deploy"),
    UIAction("clear-cache", "C", "clear_cache", "Clear cache", "Remove the [cache] paths (compile caches) and verify they are gone", acts=True, engine="clear-cache"),
    UIAction("verify", "V", "verify", "Verify", "Check the running job: spawned, alive, log created, log growing, progress", acts=True, engine="verify"),
    UIAction("relaunch", "L", "relaunch", "Relaunch", "Stop the job, launch it again with a new log, verify it",
             acts=True, destructive=True, engine="relaunch"),
    UIAction("stop", "S", "stop", "Stop", "Stop the job cockpit launched: TERM, then KILL, then check nothing is left",
             acts=True, destructive=True, footer=True, engine="stop"),
    UIAction("reboot", "R", "reboot", "Reboot", "Reboot the container (pct reboot): the cure for zombies PID 1 never reaps",
             acts=True, destructive=True, footer=True, engine="reboot"),
    UIAction("shell", "exclamation_mark", "shell", "Shell", "Open a shell inside the container (ssh -t HOST pct enter CTID); cockpit resumes when it exits",
             acts=True, key_display="!"),
    UIAction("demo-fix", "F", "demo_fix", "Apply demo fix", "Demo only: copy the shipped fix (serialise the first compile) into the demo's working copy",
             acts=True, demo_only=True),
    UIAction("demo-crash-later", "K", "demo_crash_later", "Demo: crash later", "Demo only: make the running demo job die in 5 s, to see a passed attempt's fate turn to died in the history",
             acts=True, demo_only=True),
    # -- looking ------------------------------------------------------------------------------
    UIAction("zoom", "z", "zoom", "Zoom", "Zoom the focused pane to the full screen, or back", footer=True),
    UIAction("follow", "f", "follow", "Follow/pause", "Log: follow new lines, or pause to read"),
    UIAction("filter", "slash", "filter", "Filter", "Log: show only lines containing a text (empty: all lines)", footer=True, key_display="/"),
    UIAction("next-error", "e", "next_error", "Next err", "Log: jump to the next classified error (pauses following)", footer=True),
    UIAction("first-error", "E", "first_error", "First error", "Log: jump to the first classified error, usually the root cause"),
    UIAction("job-only", "j", "job_only", "Job only", "Processes: show only the job's processes, zombies, D states and PID 1, or everything"),
    UIAction("verdict", "v", "verdict", "Verdict", "Show the full verdict of the selected attempt (or the last action)"),
    UIAction("refresh", "u", "refresh", "Refresh", "Refresh processes, GPUs, log and history now"),
    UIAction("focus-procs", "1", "focus_pane('procs')", "Processes", "Focus the process pane"),
    UIAction("focus-log", "2", "focus_pane('log')", "Log", "Focus the log pane"),
    UIAction("focus-gpu", "3", "focus_pane('gpu')", "GPUs", "Focus the GPU pane"),
    UIAction("focus-history", "4", "focus_pane('history')", "History", "Focus the attempt history"),
    UIAction("theme", "ctrl+t", "cycle_theme", "Theme", "Switch to the next theme (dark, light, high-contrast, colorblind, yours)"),
    UIAction("help", "question_mark,f1", "help", "Help", "Show every key, the layers and the outcomes", footer=True, key_display="?"),
    UIAction("quit", "q", "quit", "Quit", "Quit cockpit (a running job keeps running)", footer=True),
]

BY_ID = {a.id: a for a in ACTIONS}
_BY_ACTION = {a.action: a for a in ACTIONS}


def action_spec(action_name: str) -> UIAction | None:
    """The registry entry for a Textual action name (``focus_pane('log')`` → its own entry)."""
    return _BY_ACTION.get(action_name) or next((a for a in ACTIONS if a.action.split("(")[0] == action_name), None)


def bindings(actions: Iterable[UIAction] = ACTIONS) -> list[Binding]:
    """Every action's binding (demo-only ones too: the app's ``check_action`` disables them)."""
    return [a.binding() for a in actions]


def acting_action_names() -> frozenset[str]:
    """Textual action names that act on the target (disabled by ``--read-only``)."""
    return frozenset(a.action for a in ACTIONS if a.acts)
