"""The app's settings: themes, the keymap and live reload of the config and theme files.

A controller of :class:`~cockpit.ui.app.CockpitApp` (``app.settings``): the policy of what a saved
config changes at once (``LIVE_KEYS`` and ``[loop]``) and what waits for a restart, the one theme
fallback (an unknown theme is reported with a near match), and keymap checks (unknown ids, a
destructive action on a bare home-row key).  Only message handlers here touch widgets.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import TYPE_CHECKING

from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.theme import Theme

from ..core.keymap import BY_ID, HOME_ROW
from .guard import while_mounted
from .messages import ConfigInvalid, ConfigReloaded, ThemeFileInvalid, ThemeFileReloaded
from .panes.gpu import GpuPane
from .panes.history import HistoryPane
from .panes.log import LogPane
from .panes.procs import ProcsPane
from .panes.status import StatusLine
from .panes.verdict import VerdictStrip
from .themes import DEFAULT_THEME, ThemeError

if TYPE_CHECKING:
    from .host import CockpitHost

__all__ = ["Settings"]


class Settings:
    """Themes, keymap and live reload for :class:`~cockpit.ui.app.CockpitApp`."""

    def __init__(self, app: CockpitHost) -> None:
        self.app = app

    # -- themes and keys ---------------------------------------------------------------------
    def preselect_theme(self) -> None:
        """The configured theme, chosen before the app starts (its constructor), so the stylesheet is
        parsed and applied once with its colours: chosen in ``on_mount``, the whole stylesheet was
        parsed again and every widget restyled and redrawn (a fifth of a start's CPU).  Quiet: an
        unknown name is reported by :meth:`apply_themes` on mount, as before."""
        for theme in self.app.themes.themes.values():
            self.app.register_theme(theme)
        want = self.app.cfg.ui.theme or DEFAULT_THEME
        if want in self.app.available_themes:
            self.app.theme = want

    def apply_themes(self) -> None:
        for theme in self.app.themes.themes.values():
            self.app.register_theme(theme)
        for err in self.app.themes.errors:
            self.app.notify(f"{err} — theme skipped", title="theme file", severity="error", timeout=10, markup=False)
        self.set_theme(self.app.cfg.ui.theme or DEFAULT_THEME, fallback=DEFAULT_THEME)

    def set_theme(self, want: str, *, fallback: str | None = None) -> None:
        """Switch to theme ``want``; an unknown name is reported (with a near match) and the
        ``fallback`` is used, or the current theme kept (a live config edit)."""
        if want in self.app.themes.themes or want in self.app.available_themes:
            self.app.theme = want
            return
        close = difflib.get_close_matches(want, self.app.themes.names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(self.app.themes.names)})"
        what = f"using {fallback}" if fallback else f"keeping {self.app.theme}"
        self.app.notify(f"[ui] theme = {want!r} not found{hint}: {what}", severity="error", timeout=10, markup=False)
        if fallback:
            self.app.theme = fallback

    def apply_keymap(self) -> None:
        had = bool(self.app.keymap)
        km = dict(self.app.cfg.keymap or {})
        unknown = [k for k in km if k not in BY_ID]
        for k in unknown:
            close = difflib.get_close_matches(k, list(BY_ID), n=1)
            self.app.notify(f"[keymap] {k!r} is not an action id" + (f": did you mean {close[0]!r}?" if close else ""), severity="warning", timeout=10, markup=False)
            km.pop(k)
        for k, keys in list(km.items()):
            spec = BY_ID[k]
            bare = [x.strip() for x in keys.split(",") if x.strip() in HOME_ROW]
            if spec.destructive and bare:
                self.app.notify(f"[keymap] {k} = {keys!r}: a destructive action may not sit on a bare home-row key; kept {spec.key!r}",
                            severity="warning", timeout=10, markup=False)
                km.pop(k)
        self.app.keymap = km
        if km or had:
            self.app.set_keymap(km)

    def bindings_clash(self, clashed_bindings: set[Binding]) -> None:
        names = ", ".join(sorted(b.id or b.action for b in clashed_bindings))
        self.app.notify(f"[keymap] key clash: {names} — the first one wins", severity="warning", timeout=8, markup=False)

    def action_cycle_theme(self) -> None:
        nxt = self.app.themes.next_after(self.app.theme)
        self.app.theme = nxt
        self.app.notify(f"theme: {nxt}", timeout=2, markup=False)

    @while_mounted
    def theme_changed(self, theme: Theme) -> None:
        self.app.query_one(HistoryPane).retheme()
        self.app.query_one(LogPane).retheme()
        self.app.query_one(ProcsPane).redraw()
        self.app.query_one(GpuPane).redraw()
        strip = self.app.query_one(VerdictStrip)
        strip.redraw()

    # -- live reload ---------------------------------------------------------------------------
    #: keys a saved config applies at once; the rest waits for a restart
    LIVE_KEYS = ("ui.theme", "ui.refresh_interval", "keymap")

    @while_mounted
    def config_reloaded(self, msg: ConfigReloaded) -> None:
        from ..core.reload import changed_keys, needs_reconnect

        new, cfg = msg.cfg, self.app.cfg
        self.app.query_one(StatusLine).set_config_error(None)
        keys = changed_keys(cfg, new)
        if not keys:
            return
        live = [k for k in keys if k in self.LIVE_KEYS or (k.startswith("loop.") and k != "loop.gitignore")]
        later = [k for k in keys if k not in live]
        if "ui.refresh_interval" in live:
            cfg.ui.refresh_interval = new.ui.refresh_interval
            self.app.status_state.interval = new.ui.refresh_interval
            for cls in (ProcsPane, GpuPane, LogPane, HistoryPane):
                self.app.query_one(cls).interval = new.ui.refresh_interval
        if "ui.theme" in live:
            cfg.ui.theme = new.ui.theme
            self.set_theme(new.ui.theme or DEFAULT_THEME)
        if "keymap" in live:
            cfg.keymap = dict(new.keymap)
            self.apply_keymap()
        if any(k.startswith("loop.") for k in live):
            for f in dataclasses.fields(cfg.loop):
                if f.name != "gitignore":
                    setattr(cfg.loop, f.name, getattr(new.loop, f.name))
            if self.app.loop_runner is not None:
                self.app.loop_runner.apply(cfg.loop)
                if "loop.attempt_on_save" in live and not self.app.read_only:
                    self.app.loop_runner.set_enabled(bool(cfg.loop.attempt_on_save))
                self.app.post_message(self.app.loop_runner.snapshot())
        text = f"applied {', '.join(live)}" if live else "nothing that applies without a restart"
        sev: SeverityLevel = "information"
        if needs_reconnect(later):
            text += "; restart cockpit to apply target/ssh changes"
            sev = "warning"
        rest = [k for k in later if needs_reconnect([k]) is False]
        if rest:
            text += f"; restart cockpit to apply {', '.join(rest[:6])}" + (" …" if len(rest) > 6 else "")
            sev = "warning"
        self.app.notify(text, title="config reloaded", severity=sev, timeout=8, markup=False)

    @while_mounted
    def config_invalid(self, msg: ConfigInvalid) -> None:
        text = msg.error.message or str(msg.error)
        self.app.query_one(StatusLine).set_config_error(text)
        self.app.notify(f"{text}\nthe running config stays", title="config not reloaded", severity="error", timeout=12, markup=False)

    def theme_file_reloaded(self, msg: ThemeFileReloaded) -> None:
        theme = msg.theme
        self.app.themes.themes[theme.name] = theme
        self.app.register_theme(theme)
        if self.app.theme == theme.name:
            self.app.mutate_reactive(App.theme)  # re-apply the edited theme
            self.app.notify(f"theme {theme.name} reloaded from {msg.path}", timeout=3, markup=False)

    def theme_file_invalid(self, msg: ThemeFileInvalid) -> None:
        err = msg.error
        text = (err.message if isinstance(err, ThemeError) else "") or str(err)
        self.app.notify(f"{text} — keeping the last good version of this theme", title="theme file", severity="error", timeout=10, markup=False)
