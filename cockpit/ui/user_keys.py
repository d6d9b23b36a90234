"""The user's own ``[[actions]]`` in the TUI: their keys, the confirmation, and the result.

A mixin of :class:`~cockpit.ui.app.CockpitApp` like :mod:`.keys`.  Each action is a registry entry
(:func:`~cockpit.core.keymap.user_ui_actions`) bound at mount to ``user_action('NAME')``; it acts on
the target, so ``--read-only`` disables it (``check_action``), and a destructive one asks first,
showing the exact command with the target's values filled in.  The result comes back as a
:class:`~cockpit.ui.messages.UserActionDone`: a scrollable view (``view = true``) or a toast with
the exit code and the last line; a failure to run at all names its layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.action_table import specs_for
from ..core.keymap import UIAction, user_ui_actions
from ..core.user_template import MissingField
from .confirmtext import target_where
from .messages import UserActionDone
from .screens.confirm import ConfirmScreen
from .screens.output import OutputScreen

if TYPE_CHECKING:
    from textual.app import App

    from ..core.config import Config
    from ..core.engine import Engine
    from .driver import Driver

    _AppBase = App[int]
else:
    _AppBase = object

__all__ = ["UserActionKeys"]


class UserActionKeys(_AppBase):
    engine: Engine
    cfg: Config
    driver: Driver
    read_only: bool
    #: the user's actions by name (registry entries: help screen, palette, check_action)
    user_actions: dict[str, UIAction]

    def load_user_actions(self) -> None:
        self.user_actions = {a.id: a for a in user_ui_actions(specs_for(self.cfg))}

    def bind_user_actions(self) -> None:
        """Bind each action's key (checked against the built-ins' keys when the config loaded)."""
        for a in self.user_actions.values():
            if a.key:
                self.bind(a.key, a.action, description=a.description, show=False)

    def _where(self, name: str) -> str:
        ua = self.engine.user_actions[name]
        return target_where(self.cfg, host=ua.where == "host") + f"; killed after {ua.timeout:g} s"

    def action_user_action(self, name: str) -> None:
        spec = self.user_actions.get(name)
        if spec is None:
            self.notify(f"no action {name!r} in the config", severity="warning", timeout=4, markup=False)
            return
        try:
            command = self.engine.user_action_command(name)
        except MissingField as e:
            self.notify(f"{e}: run an attempt (or launch) first", title=name, severity="warning", timeout=6, markup=False)
            return
        if not spec.destructive:
            self._start_user_action(name, None)
            return
        cur = getattr(self.engine, "current_action", None)
        if cur:
            self.notify(f"the target is busy: {cur} is running", severity="warning", timeout=4, markup=False)
            return
        self.push_screen(ConfirmScreen(f"Run {name}?", spec.help, command, where=self._where(name), yes="Run"),
                         lambda ok: self._start_user_action(name, command) if ok else None)

    def _start_user_action(self, name: str, confirmed: str | None) -> None:
        self.notify(f"{name}: running…", timeout=2, markup=False)
        self.run_worker(self.driver.user_action(name, self.post_message, confirmed), name=f"action {name}", group="user-action",
                        exit_on_error=False)

    def on_user_action_done(self, msg: UserActionDone) -> None:
        r = msg.result
        if not r.ran:
            self.notify(r.answer(), title=f"{r.name} could not run", severity="error", timeout=10, markup=False)
        elif self.user_actions.get(r.name) is not None and self.engine.user_actions[r.name].view:
            self.push_screen(OutputScreen(r, self._where(r.name)))
        else:
            text = r.answer() + (f" — {r.last_line}" if r.last_line else "")
            self.notify(text, title=r.name, severity="information" if r.ok else "warning", timeout=8, markup=False)
