"""The command palette (ctrl+p): every registry action that is allowed right now, the user's own
``[[actions]]`` beside the built-ins.

Actions that ``--read-only`` (or a non-demo target) disables are not offered at all.
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from ..core.keymap import ACTIONS, UIAction
from .screens.help import key_label

__all__ = ["CockpitCommands"]


class CockpitCommands(Provider):
    def _available(self) -> list[UIAction]:
        allowed = getattr(self.app, "action_allowed", None)
        mine = list(getattr(self.app, "user_actions", {}).values())
        return [a for a in [*ACTIONS, *mine] if allowed is None or allowed(a)]

    def _title(self, a: UIAction) -> str:
        return f"{a.description}"

    def _help(self, a: UIAction) -> str:
        keymap = getattr(self.app, "keymap", {}) or {}
        return escape(f"{a.help}  (key: {key_label(keymap.get(a.id, a.key))})")

    def _targets(self) -> list[tuple[str, object]]:
        choices: list[str] = getattr(self.app, "target_choices", lambda: [])()
        switch = getattr(self.app, "switch_target", None)
        return [(f"Switch to target {n}", partial(switch, n)) for n in choices] if switch else []

    async def discover(self) -> Hits:
        for a in self._available():
            yield DiscoveryHit(self._title(a), partial(self.app.run_action, a.action), help=self._help(a))
        for title, go in self._targets():
            yield DiscoveryHit(escape(title), go, help="the panes show that target; this one stays watched in the strip")  # type: ignore[arg-type]

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
                yield Hit(score, matcher.highlight(title), go, text=title)  # type: ignore[arg-type]
