"""The one registry of keys, as plain data: it drives the TUI's bindings, the footer, the help
screen and the command palette, so they can never disagree, and the config checks ``[keymap]`` and
``[[actions]]`` keys against it without loading any UI.  Actions on the target take their label, help and
destructive flag from the core's action table (:mod:`cockpit.core.action_table`), which also makes
the CLI's sub-commands: one table for every front end.

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

from .action_table import BY_ID as BY_ID_CORE
from .action_table import ActionSpec

__all__ = ["UIAction", "ACTIONS", "BY_ID", "HOME_ROW", "acting_action_names", "user_ui_actions"]

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


def _target(engine_id: str, key: str, action: str, *, footer: bool = False) -> UIAction:
    """A key for one of the engine's actions: label, help and the destructive flag come from the
    core's one action table (:mod:`cockpit.core.action_table`)."""
    spec = BY_ID_CORE[engine_id]
    return UIAction(engine_id, key, action, spec.label, spec.help, acts=True, destructive=spec.destructive, footer=footer,
                    engine=engine_id)


ACTIONS: list[UIAction] = [
    # -- acting on the target ---------------------------------------------------------------
    _target("attempt", "t", "attempt", footer=True),
    UIAction("attempt-on-save", "A", "attempt_on_save", "On save",
             "Toggle attempt on save: when a save in [deploy] source settles, attempt with the last hypothesis (a try counter is added); "
             "a save during an attempt queues one more", acts=True),
    _target("deploy", "D", "deploy"),
    _target("clear-cache", "C", "clear_cache"),
    _target("verify", "V", "verify"),
    _target("relaunch", "L", "relaunch"),
    _target("stop", "S", "stop", footer=True),
    _target("reboot", "R", "reboot", footer=True),
    UIAction("shell", "exclamation_mark", "shell", "Shell", "Open a shell inside the container (ssh -t HOST pct enter CTID); cockpit resumes when it exits",
             acts=True, key_display="!"),
    UIAction("demo-fix", "F", "demo_fix", "Apply demo fix", "Demo only: copy the shipped fix (serialise the first compile) into the demo's working copy",
             acts=True, demo_only=True),
    UIAction("demo-hang", "H", "demo_hang", "Demo: hang", "Demo only: make the running demo job deadlock in 5 s: it reads stalled 5 s later; w shows where its threads wait",
             acts=True, demo_only=True),
    UIAction("demo-crash-later", "K", "demo_crash_later", "Demo: crash later", "Demo only: make the running demo job die in 5 s, to see a passed attempt's fate turn to died in the history",
             acts=True, demo_only=True),
    # -- looking ------------------------------------------------------------------------------
    UIAction("adopt", "J", "adopt", "Adopt", "Processes: make the selected process (a job cockpit did not start, e.g. a stray) "
             "cockpit's job: its log and fate followed and judged, stopped by pid and start time on the next attempt", acts=True),
    UIAction("zoom", "z", "zoom", "Zoom", "Zoom the focused pane to the full screen, or back", footer=True),
    UIAction("follow", "f", "follow", "Follow/pause", "Log: follow new lines, or pause to read"),
    UIAction("filter", "slash", "filter", "Filter", "Log: show only lines containing a text (empty: all lines); -r regex, -s case-sensitive, "
             "-C N lines of context around each match", footer=True, key_display="/"),
    UIAction("next-error", "e", "next_error", "Next err", "Log: jump to the next classified error (pauses following)", footer=True),
    UIAction("first-error", "E", "first_error", "First error", "Log: jump to the first classified error, usually the root cause"),
    UIAction("search", "s", "search", "Search", "Log: mark every line containing a text, keep all lines, pause following; "
             "-r regex, -s case-sensitive (esc: clear and follow again)"),
    UIAction("next-match", "n", "next_match", "Next match", "Log: jump to the next line the search or filter matched (wraps)"),
    UIAction("prev-match", "N", "prev_match", "Previous match", "Log: jump to the previous line the search or filter matched (wraps)"),
    UIAction("search-regex", "ctrl+r", "search_regex", "Regex", "Log search/filter: switch -r (the text is a regular expression) in the prompt or the active search"),
    UIAction("search-case", "ctrl+s", "search_case", "Case", "Log search/filter: switch -s (case-sensitive) in the prompt or the active search"),
    UIAction("copy", "y", "copy", "Copy", "Copy to the local clipboard (OSC 52, also over SSH; tmux: set -s set-clipboard on): the selected log line "
             "or its whole traceback, the selected attempt as Markdown, a verdict with its evidence, a process's findings"),
    UIAction("mouse", "m", "mouse", "Mouse", "Mouse capture on/off: off lets the terminal select text with the mouse (tmux: hold shift)"),
    UIAction("job-only", "j", "job_only", "Job only", "Processes: show only the job's processes, zombies, D states and PID 1, or everything"),
    UIAction("own-procs", "o", "own_procs", "Own procs", "Processes: show or hide cockpit's own processes (its session shell and the "
             "probes it runs), hidden by default and never counted in findings"),
    UIAction("verdict", "v", "verdict", "Verdict", "Show the full verdict of the selected attempt (or the last action)"),
    UIAction("stacks", "w", "stacks", "Stacks", "Where every thread of the job is: py-spy dump inside the target (else the kernel's view), "
             "grouped by identical stacks and saved with the attempt: the evidence a hang leaves"),
    UIAction("compile", "T", "compile", "Compile", "torch.compile's account of the job: frames, recompiles and why, graph breaks, cache, "
             "failures, alerts with advice (from its TORCH_TRACE)"),
    UIAction("refresh", "u", "refresh", "Refresh", "Refresh processes, GPUs, log and history now"),
    UIAction("focus-procs", "1", "focus_pane('procs')", "Processes", "Focus the process pane"),
    UIAction("focus-log", "2", "focus_pane('log')", "Log", "Focus the log pane"),
    UIAction("focus-gpu", "3", "focus_pane('gpu')", "GPUs", "Focus the GPU pane"),
    UIAction("focus-history", "4", "focus_pane('history')", "History", "Focus the attempt history"),
    UIAction("focus-metrics", "5", "focus_pane('metrics')", "Metrics", "Show the metrics pane in the GPU pane's place (3 brings the GPUs back) and focus it"),
    UIAction("metric-next", "right_square_bracket", "metric_next", "Next metric", "Metrics: plot the next metric the log gives (loss, lr, tok/s …)",
             key_display="]"),
    UIAction("overlay", "plus", "overlay", "Overlay", "Metrics: overlay the attempt selected in the attempts pane on the current one, or take it off",
             key_display="+"),
    UIAction("next-target", "greater_than_sign", "next_target", "Next target", "Several targets ([[targets]]): switch the panes to the next target "
             "(the others stay watched in the target strip; a running job keeps running)", key_display=">"),
    UIAction("prev-target", "less_than_sign", "prev_target", "Previous target", "Several targets: switch the panes to the previous target",
             key_display="<"),
    UIAction("theme", "ctrl+t", "cycle_theme", "Theme", "Switch to the next theme (dark, light, high-contrast, colorblind, yours)"),
    UIAction("help", "question_mark,f1", "help", "Help", "Show every key, the layers and the outcomes", footer=True, key_display="?"),
    UIAction("quit", "q", "quit", "Quit", "Quit cockpit (a running job keeps running)", footer=True),
]

BY_ID = {a.id: a for a in ACTIONS}
_BY_ACTION = {a.action: a for a in ACTIONS}


def action_spec(action_name: str) -> UIAction | None:
    """The registry entry for a Textual action name (``focus_pane('log')`` → its own entry)."""
    return _BY_ACTION.get(action_name) or next((a for a in ACTIONS if a.action.split("(")[0] == action_name), None)


def user_ui_actions(specs: Iterable[ActionSpec]) -> list[UIAction]:
    """The registry entries of the user's ``[[actions]]`` (from :func:`cockpit.core.action_table.specs_for`):
    each acts on the target (``--read-only`` disables it) and runs ``action_user_action(NAME)``."""
    return [UIAction(s.id, s.key, f"user_action({s.id!r})", s.label, s.help, acts=True, destructive=s.destructive, engine=s.id)
            for s in specs if s.user]


def acting_action_names() -> frozenset[str]:
    """Textual action names that act on the target (disabled by ``--read-only``)."""
    return frozenset(a.action for a in ACTIONS if a.acts)
