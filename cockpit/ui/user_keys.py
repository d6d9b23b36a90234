"""The user's own ``[[actions]]`` in the TUI: their keys, the confirmation, and the result.

A controller of :class:`~cockpit.ui.app.CockpitApp` (``app.user``).  Each action is a registry entry
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
    from .host import CockpitHost

__all__ = ["UserActions"]


class UserActions:
    def __init__(self, app: CockpitHost) -> None:
        self.app = app
        #: the user's actions by name (registry entries: help screen, palette, check_action)
        self.actions: dict[str, UIAction] = {a.id: a for a in user_ui_actions(specs_for(app.cfg))}

    def bind(self) -> None:
        """Bind each action's key (checked against the built-ins' keys when the config loaded)."""
        for a in self.actions.values():
            if a.key:
                self.app.bind(a.key, a.action, description=a.description, show=False)

    def _where(self, name: str) -> str:
        ua = self.app.engine.user_actions[name]
        return target_where(self.app.cfg, host=ua.where == "host") + f"; killed after {ua.timeout:g} s"

    def action_user_action(self, name: str) -> None:
        app = self.app
        spec = self.actions.get(name)
        if spec is None:
            app.notify(f"no action {name!r} in the config", severity="warning", timeout=4, markup=False)
            return
        try:
            command = app.engine.user_action_command(name)
        except MissingField as e:
            app.notify(f"{e}: run an attempt (or launch) first", title=name, severity="warning", timeout=6, markup=False)
            return
        if not spec.destructive:
            self._start(name, None)
            return
        cur = app.engine.current_action
        if cur:
            app.notify(f"the target is busy: {cur} is running", severity="warning", timeout=4, markup=False)
            return
        app.push_screen(ConfirmScreen(f"Run {name}?", spec.help, command, where=self._where(name), yes="Run"),
                        lambda ok: self._start(name, command) if ok else None)

    def _start(self, name: str, confirmed: str | None) -> None:
        app = self.app
        app.notify(f"{name}: running…", timeout=2, markup=False)
        app.run_worker(app.driver.user_action(name, app.post_message, confirmed), name=f"action {name}", group="user-action",
                       exit_on_error=False)

    def done(self, msg: UserActionDone) -> None:
        app = self.app
        r = msg.result
        if not r.ran:
            app.notify(r.answer(), title=f"{r.name} could not run", severity="error", timeout=10, markup=False)
        elif self.actions.get(r.name) is not None and app.engine.user_actions[r.name].view:
            app.push_screen(OutputScreen(r, self._where(r.name)))
        else:
            text = r.answer() + (f" — {r.last_line}" if r.last_line else "")
            app.notify(text, title=r.name, severity="information" if r.ok else "warning", timeout=8, markup=False)
