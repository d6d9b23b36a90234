"""What each key does: the ``action_*`` methods of the app, as two mixins.

``TargetKeys`` act on the target through the engine (and are disabled by ``--read-only``);
destructive ones push a confirmation that shows the exact command first.  ``ViewKeys`` only
change what is shown.  Both run in the app (``self`` is the :class:`~cockpit.ui.app.CockpitApp`);
engine calls go to async workers in group ``action``.  For the type checker both derive from
``App[int]`` and declare the app's attributes they use; at run time they are plain mixins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.action_table import BY_ID as CORE
from ..core.keymap import BY_ID
from ..core.watch import strip_counter
from .confirmtext import reboot_command, stop_commands, target_where
from .panes.gpu import GpuPane
from .panes.history import HistoryPane
from .panes.log import LogPane
from .panes.procs import ProcsPane
from .screens.confirm import ConfirmScreen
from .screens.help import HelpScreen
from .screens.prompt import HypothesisScreen
from .screens.verdict import VerdictScreen
from .shell import shell_command

if TYPE_CHECKING:
    from textual.app import App
    from textual.worker import Worker

    from ..core.config import Config
    from ..core.engine import Engine
    from ..core.keymap import UIAction
    from .driver import Driver
    from .live import LoopRunner

    _AppBase = App[int]
else:
    _AppBase = object

__all__ = ["TargetKeys", "ViewKeys", "demo_fix", "PANES"]

PANES = ("procs", "log", "gpu", "history", "metrics")


def demo_fix() -> Callable[[], Any] | None:
    """The demo's ``apply_fix`` when the demo package provides it."""
    try:
        from .. import demo
    except ImportError:  # pragma: no cover
        return None
    return getattr(demo, "apply_fix", None)


class TargetKeys(_AppBase):
    """Keys that act on the target (attempt, deploy, clear cache, verify, relaunch, stop, reboot,
    shell, demo fix)."""

    engine: Engine
    cfg: Config
    driver: Driver
    loop_runner: LoopRunner | None
    refresh_now: Callable[[], Worker[None]]

    def _busy(self) -> bool:
        cur = getattr(self.engine, "current_action", None)
        if cur:
            self.notify(f"the target is busy: {cur} is running", severity="warning", timeout=4, markup=False)
            return True
        return False

    def _run_engine(self, name: str) -> None:
        spec = BY_ID[name]  # the registry entry: every key that acts goes through its engine id
        assert spec.engine == name, f"{name} is not an engine action"
        self.run_worker(self.driver.action(name, self.post_message), name=name, group="action", exit_on_error=False)

    def action_attempt(self) -> None:
        if self._busy():
            return
        try:
            recs = self.engine.journal.attempts()
        except OSError:
            recs = []
        last = next((strip_counter(r.note) for r in reversed(recs) if strip_counter(r.note)), "")
        runner = self.loop_runner
        changed = sorted(runner.watcher.pending) if runner is not None and runner.running else None
        self.push_screen(HypothesisScreen(last, self._attempt_plan(), changed), self._start_attempt)

    def _attempt_plan(self) -> str:
        cfg, job = self.cfg, getattr(self.engine, "job", None)
        stop = f"stop job pid {job.pid} (TERM → KILL)" if job is not None and job.pid else "stop (no job recorded)"
        src = cfg.deploy.source or "(no [deploy] source)"
        caches = ", ".join(cfg.cache.paths) or "(none)"
        return f"deploy {src} → clear {caches} → {stop} → launch → verify"

    def _start_attempt(self, note: str | None) -> None:
        if note is None:
            return
        runner = self.loop_runner
        if runner is not None and runner.running:  # through the loop: the pending set stays right
            self.run_worker(runner.attempt_now(note), name="attempt", group="action", exit_on_error=False)
        else:
            self.run_worker(self.driver.attempt(note, self.post_message), name="attempt", group="action", exit_on_error=False)

    def action_attempt_on_save(self) -> None:
        runner = self.loop_runner
        if runner is None:
            self.notify("attempt on save needs a [deploy] source that exists", severity="warning", timeout=4, markup=False)
            return
        runner.set_enabled(not runner.enabled)
        self.post_message(runner.snapshot())
        self.notify("attempt on save: " + ("on — a settled save runs an attempt with the last hypothesis" if runner.enabled else "off"),
                    timeout=3, markup=False)

    def action_deploy(self) -> None:
        if not self._busy():
            self._run_engine("deploy")

    def action_clear_cache(self) -> None:
        """Ask first, showing each path as the target resolves it (a link followed, its size) or why
        it would be refused: the removal judges again in the command that removes."""
        if self._busy():
            return
        if not self.cfg.cache.paths:
            self.notify("no [cache] paths configured: nothing to clear", timeout=4, markup=False)
            return
        self.run_worker(self._confirm_clear_cache(), name="clear-cache-preview", group="preview", exit_on_error=False)

    async def _confirm_clear_cache(self) -> None:
        from ..core.actions.cache_guard import resolve_cache_paths
        from ..core.remote.base import RemoteError
        from .confirmtext import clear_cache_text

        judged = None
        if not (self.cfg.target.runtime == "slurm" and self.cfg.slurm.node_local_cache):  # on the nodes: judged there
            try:
                judged, _ = await resolve_cache_paths(self.engine.context(), measure=True)
            except RemoteError as e:
                self.notify(f"could not resolve the cache paths on the target: {e.message}", severity="warning", timeout=6, markup=False)
        body, command = clear_cache_text(self.cfg, judged)
        self.push_screen(ConfirmScreen(CORE["clear-cache"].confirm, body, command, where=target_where(self.cfg), yes="Clear"),
                         lambda ok: self._run_engine("clear-cache") if ok else None)

    def action_verify(self) -> None:
        if not self._busy():
            self._run_engine("verify")

    def action_stop(self) -> None:
        if self._busy():
            return
        text = stop_commands(self.engine)
        if text is None:
            self.notify("no job recorded by cockpit: nothing to stop", timeout=4, markup=False)
            return
        body, command = text
        self.push_screen(ConfirmScreen(CORE["stop"].confirm, body, command, where=target_where(self.cfg), yes="Stop"),
                         lambda ok: self._run_engine("stop") if ok else None)

    def action_relaunch(self) -> None:
        if self._busy():
            return
        text = stop_commands(self.engine)
        body, command = text if text is not None else ("No job recorded by cockpit: nothing to stop.", "")
        command = (command + "\n" if command else "") + f"then launch: {self.cfg.job.command}"
        self.push_screen(ConfirmScreen(CORE["relaunch"].confirm, body + " Then a new job is launched and verified.", command,
                                       where=target_where(self.cfg), yes="Relaunch"),
                         lambda ok: self._run_engine("relaunch") if ok else None)

    def action_reboot(self) -> None:
        if self._busy():
            return
        cmd = reboot_command(self.engine)
        if cmd is None:
            self.notify('reboot needs a container target ([target] runtime = "pct", "docker" or "podman"): cockpit does not reboot hosts',
                        severity="warning", timeout=6, markup=False)
            return
        word = self.engine.transport.runtime.restart_word
        self.push_screen(ConfirmScreen(CORE["reboot"].confirm if word == "reboot" else "Restart the container?",
                                       "Every process in the container dies, the job included. Zombies that PID 1 never "
                                       "reaps are cleared. cockpit waits until the container runs again and checks its "
                                       "process table.", cmd, where=target_where(self.cfg, host=True), yes=word.capitalize()),
                         lambda ok: self._run_engine("reboot") if ok else None)

    async def action_shell(self) -> None:
        sc = shell_command(self.cfg)
        try:
            with self.suspend():
                print(f"cockpit: {sc.display}   (exit the shell to return to cockpit)", flush=True)
                proc = await asyncio.create_subprocess_exec(*sc.argv, cwd=sc.cwd)
                await proc.wait()
            if not getattr(self, "mouse_reporting", True):  # resuming turned the driver's mouse reporting back on
                from .copy import set_mouse_capture

                set_mouse_capture(self, False)
        except Exception as e:  # noqa: BLE001 - SuspendNotSupported (headless, web), a missing command, …: each told in a notification
            self.notify(f"cannot open a shell here ({type(e).__name__}): run it yourself: {sc.display}", severity="warning", timeout=10, markup=False)
            return
        self.refresh_now()

    def action_demo_fix(self) -> None:
        fix = demo_fix()
        if fix is None:
            self.notify("the demo fix is not available", severity="warning", markup=False)
            return
        changed = fix()
        if changed:
            names = ", ".join(Path(str(p)).name for p in changed)
            self.notify(f"applied the demo fix to the working copy: {names}. Now attempt it (t).", timeout=8, markup=False)
        else:
            self.notify("the demo fix is already applied", timeout=4, markup=False)


    def action_demo_hang(self) -> None:
        from .. import demo

        demo.crash_later(5.0, kind="hang")
        self.notify("the running demo job deadlocks in 5 s and reads stalled 5 s later; then press w for its stacks", timeout=8, markup=False)

    def action_demo_crash_later(self) -> None:
        from .. import demo

        demo.crash_later(5.0)
        self.notify("the running demo job dies in 5 s: watch its fate in the attempts pane [4]", timeout=6, markup=False)


class ViewKeys(_AppBase):
    """Keys that change what is shown (zoom, focus, follow, filter, errors, job-only, refresh,
    verdict, help, quit)."""

    engine: Engine
    clock: Callable[[], float]
    read_only: bool
    demo: bool
    keymap: dict[str, str]
    last_verdict: tuple[str, Any] | None
    refresh_now: Callable[[], Worker[None]]
    action_allowed: Callable[[UIAction], bool]
    load_history: Callable[[], None]
    user_actions: dict[str, UIAction]
    #: whether the terminal reports the mouse to cockpit (``m`` switches it; see :func:`.copy.set_mouse_capture`)
    mouse_reporting: bool = True

    def _focused_pane(self) -> Any:
        w = self.focused
        while w is not None:
            if getattr(w, "pane_id", None) in PANES:
                return w
            w = w.parent  # type: ignore[assignment]
        return self.query_one(LogPane)

    def action_zoom(self) -> None:
        if self.screen.maximized is not None:
            self.screen.minimize()
            for pane in (self.query_one(ProcsPane), self.query_one(GpuPane)):
                if pane._dirty:
                    pane.redraw()
        else:
            self.screen.maximize(self._focused_pane(), container=False)

    def action_focus_pane(self, name: str) -> None:
        target = {"procs": "#procs-table", "log": "#log-view", "gpu": "#gpu-scroll", "history": "#history-table"}.get(name)
        if target:
            if self.screen.maximized is not None:
                self.screen.minimize()
            self.query_one(target).focus()

    def action_follow(self) -> None:
        self.query_one(LogPane).toggle_follow()

    def action_filter(self) -> None:
        self._log_for_search().open_filter()

    def _log_for_search(self) -> LogPane:
        log = self.query_one(LogPane)
        if self.screen.maximized is not None and self.screen.maximized is not log:
            self.screen.minimize()
        return log

    def action_search(self) -> None:
        self._log_for_search().open_search()

    def action_next_match(self) -> None:
        self._log_for_search().next_match()

    def action_prev_match(self) -> None:
        self._log_for_search().next_match(backwards=True)

    def action_search_regex(self) -> None:
        self.query_one(LogPane).toggle_search_option("-r")

    def action_search_case(self) -> None:
        self.query_one(LogPane).toggle_search_option("-s")

    def action_copy(self) -> None:
        from .copy import copy_focused

        copy_focused(self, self._focused_pane())

    def action_mouse(self) -> None:
        from .copy import set_mouse_capture

        on = not self.mouse_reporting
        set_mouse_capture(self, on)
        self.notify("mouse capture on: clicks select lines, the wheel scrolls panes" if on else
                    "mouse capture off: select text with the terminal's mouse (m turns capture back on)", timeout=4, markup=False)

    def action_next_error(self) -> None:
        self.query_one(LogPane).jump_error()

    def action_first_error(self) -> None:
        self.query_one(LogPane).jump_error(first=True)

    def action_job_only(self) -> None:
        pane = self.query_one(ProcsPane)
        pane.set_job_only(not pane.job_only)

    def action_own_procs(self) -> None:
        pane = self.query_one(ProcsPane)
        pane.set_show_own(not pane.show_own)

    def action_refresh(self) -> None:
        self.refresh_now()

    def action_stacks(self) -> None:
        if self.read_only:  # --read-only, --share, the browser: run nothing in the target, write nothing
            self.run_worker(self._saved_stacks(), name="stacks", group="stacks", exit_on_error=False)
            return
        if getattr(self.engine, "job", None) is None:
            self.notify("no job recorded by cockpit: no stacks to dump", timeout=4, markup=False)
            return
        self.notify("dumping every thread's stack…", timeout=3, markup=False)
        self.run_worker(self._stacks(), name="stacks", group="stacks", exit_on_error=False)

    async def _stacks(self) -> None:
        from ..core.remote.base import RemoteError
        from .screens.stacks import StacksScreen

        try:
            dump = await self.engine.stacks()
        except RemoteError as e:
            self.notify(f"stacks: {e.message}", severity="error", timeout=8, markup=False)
            return
        if dump is not None:
            self.push_screen(StacksScreen(dump))
            self.load_history()

    async def _saved_stacks(self) -> None:
        """Read-only: the dump the journal kept for the current attempt, saying it is that one."""
        from .screens.stacks import StacksScreen, saved_stacks

        saved = await asyncio.to_thread(saved_stacks, self.engine)
        if saved is None:
            self.notify("read-only: no saved dump for this attempt (nothing is run in the target here)", timeout=5, markup=False)
            return
        self.push_screen(StacksScreen(saved=saved))

    def action_verdict(self) -> None:
        pane = self.query_one(HistoryPane)
        sel = pane.selected() if (self.focused is pane.table) else None
        if sel is not None:
            rec = pane.record(sel)
            if rec is not None:
                self.push_screen(self.verdict_screen(rec))
                return
        if self.last_verdict is not None and (not pane.records or self.focused is not pane.table):
            action, verdict = self.last_verdict
            if action != "attempt":
                self.push_screen(VerdictScreen(None, verdict=verdict, action=action, clock=self.clock))
                return
        if pane.records:
            self.push_screen(self.verdict_screen(pane.records[-1]))
        else:
            self.notify("no verdict yet", timeout=3, markup=False)

    def verdict_screen(self, rec: Any) -> VerdictScreen:
        """The verdict of one attempt, with the diff it deployed when the journal has one."""
        from ..core.changes import read_diff

        diff = None
        if getattr(rec, "diff", None):
            try:
                diff = read_diff(Path(self.engine.journal.path).parent, rec.attempt)
            except OSError:  # read_diff answers None for a missing diff; anything else unreadable shows no diff
                diff = None
        return VerdictScreen(rec, clock=self.clock, diff_text=diff)

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.keymap, read_only=self.read_only, demo=self.demo, allowed=self.action_allowed,
                                    user=list(self.user_actions.values())))

    async def action_quit(self) -> None:
        cur = getattr(self.engine, "current_action", None)
        if cur:
            def done(ok: bool | None) -> None:
                if ok:
                    self.exit(0)

            self.push_screen(ConfirmScreen(f"Quit while {cur} runs?", "cockpit stops waiting; the attempt is recorded as "
                                           "interrupted. A job already launched keeps running.", "", yes="Quit"), done)
            return
        self.exit(0)
