"""The command palette (ctrl+p): every registry action that is allowed right now, the user's own
``[[actions]]`` beside the built-ins.

Actions that ``--read-only`` (or a non-demo target) disables are not offered at all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from ..core.keymap import ACTIONS, UIAction
from .screens.help import key_label

if TYPE_CHECKING:
    from .host import CockpitHost

__all__ = ["CockpitCommands"]


class CockpitCommands(Provider):
    @property
    def cockpit(self) -> CockpitHost:
        """The app this palette belongs to (it is only ever given to :class:`~.app.CockpitApp`)."""
        return cast("CockpitHost", self.app)  # Provider.app is typed as Textual's App

    def _available(self) -> list[UIAction]:
        app = self.cockpit
        return [a for a in [*ACTIONS, *app.user.actions.values()] if app.action_allowed(a)]

    def _title(self, a: UIAction) -> str:
        return f"{a.description}"

    def _help(self, a: UIAction) -> str:
        keymap = self.cockpit.keymap
        return escape(f"{a.help}  (key: {key_label(keymap.get(a.id, a.key))})")

    def _targets(self) -> list[tuple[str, Callable[[], None]]]:
        targets = self.cockpit.targets
        return [(f"Switch to target {n}", partial(targets.switch, n)) for n in targets.choices()]

    async def discover(self) -> Hits:
        for a in self._available():
            yield DiscoveryHit(self._title(a), partial(self.app.run_action, a.action), help=self._help(a))
        for title, go in self._targets():
            yield DiscoveryHit(escape(title), go, help="the panes show that target; this one stays watched in the strip")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for a in self._available():
            text = f"{self._title(a)} {a.id}"
            score = max(matcher.match(self._title(a)), matcher.match(a.id), matcher.match(a.help) * 0.5)
            if score > 0:
                yield Hit(score, matcher.highlight(self._title(a)), partial(self.app.run_action, a.action), text=text,
                          help=self._help(a))
        for title, go in self._targets():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), go, text=title)
