"""What the keys that only change what is shown do: :class:`Views`, the app's ``views`` controller.

Zoom, focus, follow, filter and search the log, copy, the mouse, the process filters, refresh,
stacks, the verdict, help and quit; and the metrics pane: ``5`` shows it (in the GPU pane's place;
``3`` brings the GPUs back), ``]`` the next metric, ``+`` overlays the attempt selected in the
attempts pane (or takes it off).  The app delegates each key's ``action_*`` here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from textual.dom import DOMNode

from .copy import copy_focused, set_mouse_capture
from .panes.base import Pane
from .panes.gpu import GpuPane
from .panes.history import HistoryPane
from .panes.log import LogPane
from .panes.metrics import MetricsPane
from .panes.procs import ProcsPane
from .screens.confirm import ConfirmScreen
from .screens.help import HelpScreen
from .screens.verdict import VerdictScreen

if TYPE_CHECKING:
    from ..core.journal import AttemptRecord
    from .host import CockpitHost

__all__ = ["Views", "PANES"]

PANES = ("procs", "log", "gpu", "history", "metrics")


class Views:
    """Keys that change what is shown (zoom, focus, follow, filter, errors, job-only, refresh,
    verdict, help, quit, metrics)."""

    def __init__(self, app: CockpitHost) -> None:
        self.app = app

    def _focused_pane(self) -> Pane:
        w: DOMNode | None = self.app.focused
        while w is not None:
            if isinstance(w, Pane) and w.pane_id in PANES:
                return w
            w = w.parent
        return self.app.query_one(LogPane)

    def action_zoom(self) -> None:
        if self.app.screen.maximized is not None:
            self.app.screen.minimize()
            for pane in (self.app.query_one(ProcsPane), self.app.query_one(GpuPane)):
                if pane._dirty:
                    pane.redraw()
        else:
            self.app.screen.maximize(self._focused_pane(), container=False)

    def _focus(self, name: str) -> None:
        target = {"procs": "#procs-table", "log": "#log-view", "gpu": "#gpu-scroll", "history": "#history-table"}.get(name)
        if target:
            if self.app.screen.maximized is not None:
                self.app.screen.minimize()
            self.app.query_one(target).focus()

    def action_follow(self) -> None:
        self.app.query_one(LogPane).toggle_follow()

    def action_filter(self) -> None:
        self._log_for_search().open_filter()

    def _log_for_search(self) -> LogPane:
        log = self.app.query_one(LogPane)
        if self.app.screen.maximized is not None and self.app.screen.maximized is not log:
            self.app.screen.minimize()
        return log

    def action_search(self) -> None:
        self._log_for_search().open_search()

    def action_next_match(self) -> None:
        self._log_for_search().next_match()

    def action_prev_match(self) -> None:
        self._log_for_search().next_match(backwards=True)

    def action_search_regex(self) -> None:
        self.app.query_one(LogPane).toggle_search_option("-r")

    def action_search_case(self) -> None:
        self.app.query_one(LogPane).toggle_search_option("-s")

    def action_copy(self) -> None:
        copy_focused(self.app, self._focused_pane())

    def action_mouse(self) -> None:
        on = not self.app.mouse_reporting
        set_mouse_capture(self.app, on)
        self.app.notify("mouse capture on: clicks select lines, the wheel scrolls panes" if on else
                        "mouse capture off: select text with the terminal's mouse (m turns capture back on)", timeout=4, markup=False)

    def action_next_error(self) -> None:
        self.app.query_one(LogPane).jump_error()

    def action_first_error(self) -> None:
        self.app.query_one(LogPane).jump_error(first=True)

    def action_job_only(self) -> None:
        pane = self.app.query_one(ProcsPane)
        pane.set_job_only(not pane.job_only)

    def action_own_procs(self) -> None:
        pane = self.app.query_one(ProcsPane)
        pane.set_show_own(not pane.show_own)

    def action_refresh(self) -> None:
        self.app.refresh_now()

    def action_stacks(self) -> None:
        if self.app.read_only:  # --read-only, --share, the browser: run nothing in the target, write nothing
            self.app.run_worker(self._saved_stacks(), name="stacks", group="stacks", exit_on_error=False)
            return
        if self.app.engine.job is None:
            self.app.notify("no job recorded by cockpit: no stacks to dump", timeout=4, markup=False)
            return
        self.app.notify("dumping every thread's stack…", timeout=3, markup=False)
        self.app.run_worker(self._stacks(), name="stacks", group="stacks", exit_on_error=False)

    async def _stacks(self) -> None:
        from ..core.remote.base import RemoteError
        from .screens.stacks import StacksScreen

        try:
            dump = await self.app.engine.stacks()
        except RemoteError as e:
            self.app.notify(f"stacks: {e.message}", severity="error", timeout=8, markup=False)
            return
        if dump is not None:
            self.app.push_screen(StacksScreen(dump))
            self.app.polling.load_history()

    async def _saved_stacks(self) -> None:
        """Read-only: the dump the journal kept for the current attempt, saying it is that one."""
        from .screens.stacks import StacksScreen, saved_stacks

        saved = await asyncio.to_thread(saved_stacks, self.app.engine)
        if saved is None:
            self.app.notify("read-only: no saved dump for this attempt (nothing is run in the target here)", timeout=5, markup=False)
            return
        self.app.push_screen(StacksScreen(saved=saved))

    def action_compile(self) -> None:
        """torch.compile's account of the selected attempt (else the current job's): live while it runs, final after."""
        from ..core.compile_report import summary_of
        from .screens.compile import CompileScreen

        eng = self.app.engine
        pane = self.app.query_one(HistoryPane)
        n = (pane.selected() if self.app.focused is pane.table else None) or eng.job_attempt
        if n is None and pane.records:
            n = pane.records[-1].attempt
        rec = eng.journal.get(n) if n is not None else None
        s = (eng.compile.summary(n) if n is not None else None) or summary_of(rec.compile if rec is not None else None)
        if s is None:
            self.app.notify("no torch.compile trace for this attempt ([compile] trace)", timeout=4, markup=False)
            return
        # live while the attempt's trace is followed; else the summary is the final one (the journal's, or
        # the one CompileUpdated.final carried)
        final = n is None or n not in eng.compile.followers
        self.app.push_screen(CompileScreen(s, n, final=final))

    def action_verdict(self) -> None:
        pane = self.app.query_one(HistoryPane)
        sel = pane.selected() if (self.app.focused is pane.table) else None
        if sel is not None:
            rec = pane.record(sel)
            if rec is not None:
                self.app.push_screen(self.verdict_screen(rec))
                return
        if self.app.last_verdict is not None and (not pane.records or self.app.focused is not pane.table):
            action, verdict = self.app.last_verdict
            if action != "attempt":
                self.app.push_screen(VerdictScreen(None, verdict=verdict, action=action, clock=self.app.clock))
                return
        if pane.records:
            self.app.push_screen(self.verdict_screen(pane.records[-1]))
        else:
            self.app.notify("no verdict yet", timeout=3, markup=False)

    def verdict_screen(self, rec: AttemptRecord) -> VerdictScreen:
        """The verdict of one attempt, with the diff it deployed when the journal has one."""
        from ..core.changes import read_diff

        diff = None
        if rec.diff:
            try:
                diff = read_diff(Path(self.app.engine.journal.path).parent, rec.attempt)
            except OSError:  # read_diff answers None for a missing diff; anything else unreadable shows no diff
                diff = None
        return VerdictScreen(rec, clock=self.app.clock, diff_text=diff)

    def action_help(self) -> None:
        # one help screen is kept and reopened (composing its widgets again was a third of what opening it
        # cost); a new one replaces it when the keymap, the mode or the user's actions changed
        app = self.app
        user = list(app.user.actions.values())
        kept = app.get_screen("help") if app.is_screen_installed("help") else None
        if kept is not None and kept in app.screen_stack:
            return
        if not (isinstance(kept, HelpScreen) and kept.same_as(app.keymap, read_only=app.read_only, demo=app.demo, user=user)):
            if kept is not None:
                app.uninstall_screen("help")
                kept.remove()
            app.install_screen(HelpScreen(app.keymap, read_only=app.read_only, demo=app.demo, allowed=app.action_allowed, user=user), "help")
        app.push_screen("help")

    async def action_quit(self) -> None:
        cur = self.app.engine.current_action
        if cur:
            def done(ok: bool | None) -> None:
                if ok:
                    self.app.exit(0)

            self.app.push_screen(ConfirmScreen(f"Quit while {cur} runs?", "cockpit stops waiting; the attempt is recorded as "
                                               "interrupted. A job already launched keeps running.", "", yes="Quit"), done)
            return
        self.app.exit(0)

    def show_metrics(self, on: bool) -> None:
        """The metrics pane (``on``) or the GPU pane in their shared place."""
        gpu, metrics = self.app.query_one(GpuPane), self.app.query_one(MetricsPane)
        if bool(metrics.display) == on:
            return
        if self.app.screen.maximized is not None:
            self.app.screen.minimize()
        metrics.display, gpu.display = on, not on
        if on:
            metrics.tick(force=True)
        elif gpu._dirty:
            gpu.redraw()

    def action_focus_pane(self, name: str) -> None:
        if name == "metrics":
            self.show_metrics(True)
            if self.app.screen.maximized is not None:
                self.app.screen.minimize()
            self.app.query_one("#metrics-plot").focus()
            return
        if name == "gpu":
            self.show_metrics(False)
        self._focus(name)

    def action_metric_next(self) -> None:
        self.show_metrics(True)
        name = self.app.query_one(MetricsPane).cycle_metric()
        if name is None:
            self.app.notify("no metric in the log yet", timeout=3, markup=False)

    def action_overlay(self) -> None:
        history = self.app.query_one(HistoryPane)
        attempt = history.selected()
        if attempt is None:
            self.app.notify("select an attempt in the attempts pane (4), then press + to overlay it", timeout=4, markup=False)
            return
        pane = self.app.query_one(MetricsPane)
        if attempt == pane.current():
            self.app.notify(f"#{attempt} is the attempt the metrics pane shows; select an earlier one to overlay", timeout=4, markup=False)
            return
        self.show_metrics(True)
        on = pane.toggle_overlay(attempt)
        has = pane.source.get(attempt)
        what = f"#{attempt} overlaid" if on else f"#{attempt} taken off the plot"
        if on and (has is None or not has.series):
            what += " (its log gave no metrics)"
        self.app.notify(what, timeout=3, markup=False)
