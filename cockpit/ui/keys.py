"""What the keys that act on the target do: :class:`TargetActions`, the app's ``actions`` controller.

Every engine action of the registry (:mod:`cockpit.core.keymap`, an entry with ``engine`` set)
reaches :meth:`TargetActions.act` with its id: the attempt asks for a hypothesis, clear-cache,
stop, relaunch and reboot show the exact commands they will run (:mod:`.confirmtext`), and any
other one takes everything from the core's action table (:mod:`cockpit.core.action_table`): it
runs at once, or, destructive, after a confirmation with its ``confirm`` text and help.  So a new
engine action needs only its table entry and its key.  The other keys here (attempt on save, the
shell, the demo's) are ``action_*`` methods the app delegates to.  All are disabled by
``--read-only``; engine calls go to async workers in group ``action``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.action_table import BY_ID as CORE
from ..core.keymap import BY_ID
from ..core.loop import strip_counter
from .confirmtext import reboot_command, stop_commands, target_where
from .copy import set_mouse_capture
from .screens.confirm import ConfirmScreen
from .screens.prompt import HypothesisScreen
from .shell import shell_command

if TYPE_CHECKING:
    from .host import CockpitHost

__all__ = ["TargetActions", "demo_fix"]


def demo_fix() -> Callable[[], list[Path]] | None:
    """The demo's ``apply_fix`` when the demo package provides it."""
    try:
        from ..demo import apply_fix
    except ImportError:  # pragma: no cover
        return None
    return apply_fix


class TargetActions:
    """Keys that act on the target (attempt, deploy, clear cache, verify, relaunch, stop, reboot,
    shell, demo fix)."""

    def __init__(self, app: CockpitHost) -> None:
        self.app = app
        #: the engine actions that show more than the table says before they run
        self._own: dict[str, Callable[[], None]] = {
            "attempt": self._attempt, "clear-cache": self._clear_cache, "stop": self._stop, "relaunch": self._relaunch,
            "reboot": self._reboot,
        }

    def _busy(self) -> bool:
        cur = self.app.engine.current_action
        if cur:
            self.app.notify(f"the target is busy: {cur} is running", severity="warning", timeout=4, markup=False)
            return True
        return False

    def run_engine(self, name: str) -> None:
        spec = BY_ID[name]  # the registry entry: every key that acts goes through its engine id
        assert spec.engine == name, f"{name} is not an engine action"
        app = self.app
        app.run_worker(app.driver.action(name, app.post_message), name=name, group="action", exit_on_error=False)

    def act(self, name: str) -> None:
        """The key of engine action ``name`` (its id in the action table)."""
        if self._busy():
            return
        own = self._own.get(name)
        if own is not None:
            own()
            return
        spec = CORE[name]
        if not spec.destructive:
            self.run_engine(name)
            return
        self.app.push_screen(ConfirmScreen(spec.confirm or f"{spec.label}?", spec.help, "", where=target_where(self.app.cfg), yes=spec.label),
                             lambda ok: self.run_engine(name) if ok else None)

    def _attempt(self) -> None:
        app = self.app
        try:
            recs = app.engine.journal.attempts()
        except OSError:
            recs = []
        last = next((strip_counter(r.note) for r in reversed(recs) if strip_counter(r.note)), "")
        runner = app.loop_runner
        changed = sorted(runner.watcher.pending) if runner is not None and runner.running else None
        app.push_screen(HypothesisScreen(last, self._attempt_plan(), changed), self._start_attempt)

    def _attempt_plan(self) -> str:
        cfg, job = self.app.cfg, self.app.engine.job
        stop = f"stop job pid {job.pid} (TERM → KILL)" if job is not None and job.pid else "stop (no job recorded)"
        src = cfg.deploy.source or "(no [deploy] source)"
        caches = ", ".join(cfg.cache.paths) or "(none)"
        return f"deploy {src} → {stop} → clear {caches} → launch → verify"  # the attempt's order

    def _start_attempt(self, note: str | None) -> None:
        if note is None:
            return
        app = self.app
        runner = app.loop_runner
        if runner is not None and runner.running:  # through the loop: the pending set stays right
            app.run_worker(runner.attempt_now(note), name="attempt", group="action", exit_on_error=False)
        else:
            app.run_worker(app.driver.attempt(note, app.post_message), name="attempt", group="action", exit_on_error=False)

    def action_attempt_on_save(self) -> None:
        app = self.app
        runner = app.loop_runner
        if runner is None:
            app.notify("attempt on save needs a [deploy] source that exists", severity="warning", timeout=4, markup=False)
            return
        runner.set_enabled(not runner.enabled)
        app.post_message(runner.snapshot())
        app.notify("attempt on save: " + ("on — a settled save runs an attempt with the last hypothesis" if runner.enabled else "off"),
                   timeout=3, markup=False)

    def _clear_cache(self) -> None:
        """Ask first, showing each path as the target resolves it (a link followed, its size) or why
        it would be refused: the removal judges again in the command that removes."""
        if not self.app.cfg.cache.paths:
            self.app.notify("no [cache] paths configured: nothing to clear", timeout=4, markup=False)
            return
        self.app.run_worker(self._confirm_clear_cache(), name="clear-cache-preview", group="preview", exit_on_error=False)

    async def _confirm_clear_cache(self) -> None:
        from ..core.actions.cache_guard import resolve_cache_paths
        from ..core.remote.base import RemoteError
        from .confirmtext import clear_cache_text

        app, cfg = self.app, self.app.cfg
        judged = None
        rt = app.engine.transport.runtime
        if not (rt.job_nodes is not None and rt.node_local_caches(cfg)):  # on the job's nodes: judged there
            try:
                judged, _ = await resolve_cache_paths(app.engine.context(), measure=True)
            except RemoteError as e:
                app.notify(f"could not resolve the cache paths on the target: {e.message}", severity="warning", timeout=6, markup=False)
        body, command = clear_cache_text(cfg, judged)
        app.push_screen(ConfirmScreen(CORE["clear-cache"].confirm, body, command, where=target_where(cfg), yes="Clear"),
                        lambda ok: self.run_engine("clear-cache") if ok else None)

    def _stop(self) -> None:
        app = self.app
        text = stop_commands(app.engine)
        if text is None:
            app.notify("no job recorded by cockpit: nothing to stop", timeout=4, markup=False)
            return
        body, command = text
        app.push_screen(ConfirmScreen(CORE["stop"].confirm, body, command, where=target_where(app.cfg), yes="Stop"),
                        lambda ok: self.run_engine("stop") if ok else None)

    def _relaunch(self) -> None:
        app = self.app
        text = stop_commands(app.engine)
        body, command = text if text is not None else ("No job recorded by cockpit: nothing to stop.", "")
        command = (command + "\n" if command else "") + f"then launch: {app.cfg.job.command}"
        app.push_screen(ConfirmScreen(CORE["relaunch"].confirm, body + " Then a new job is launched and verified.", command,
                                      where=target_where(app.cfg), yes="Relaunch"),
                        lambda ok: self.run_engine("relaunch") if ok else None)

    def _reboot(self) -> None:
        app = self.app
        cmd = reboot_command(app.engine)
        if cmd is None:
            app.notify(app.engine.transport.runtime.reboot_refusal, severity="warning", timeout=6, markup=False)
            return
        word = app.engine.transport.runtime.restart_word
        app.push_screen(ConfirmScreen(CORE["reboot"].confirm if word == "reboot" else "Restart the container?",
                                      "Every process in the container dies, the job included. Zombies that PID 1 never "
                                      "reaps are cleared. cockpit waits until the container runs again and checks its "
                                      "process table.", cmd, where=target_where(app.cfg, host=True), yes=word.capitalize()),
                        lambda ok: self.run_engine("reboot") if ok else None)

    def action_adopt(self) -> None:
        """Adopt the process selected in the process pane (asks first, naming it)."""
        from .panes.procs import ProcsPane

        if self._busy():
            return
        app = self.app
        proc = app.query_one(ProcsPane).selected_proc()
        if proc is None:
            app.notify("select a process in the process pane (1, then the arrows) to adopt it", timeout=4, markup=False)
            return
        if proc.is_zombie:
            app.notify(f"pid {proc.pid} is a zombie: nothing of it runs to adopt", severity="warning", timeout=5, markup=False)
            return
        pid = proc.pid
        app.push_screen(ConfirmScreen(f"Adopt pid {pid}?", "cockpit follows this process as the job: its log and fate are "
                                      "followed and judged like a launched job's, and the next attempt stops it by pid and start "
                                      "time before launching [job] command.", proc.args, where=target_where(app.cfg), yes="Adopt"),
                        lambda ok: self._adopt(pid) if ok else None)

    def _adopt(self, pid: int) -> None:
        app = self.app
        app.run_worker(app.driver.adopt(pid, app.post_message), name="adopt", group="action", exit_on_error=False)

    async def action_shell(self) -> None:
        app = self.app
        sc = shell_command(app.cfg)
        try:
            with app.suspend():
                print(f"cockpit: {sc.display}   (exit the shell to return to cockpit)", flush=True)
                proc = await asyncio.create_subprocess_exec(*sc.argv, cwd=sc.cwd)
                await proc.wait()
            if not app.mouse_reporting:  # resuming turned the driver's mouse reporting back on
                set_mouse_capture(app, False)
        except Exception as e:  # noqa: BLE001 - SuspendNotSupported (headless, web), a missing command, …: each told in a notification
            app.notify(f"cannot open a shell here ({type(e).__name__}): run it yourself: {sc.display}", severity="warning", timeout=10, markup=False)
            return
        app.refresh_now()

    def action_demo_fix(self) -> None:
        app = self.app
        fix = demo_fix()
        if fix is None:
            app.notify("the demo fix is not available", severity="warning", markup=False)
            return
        changed = fix()
        if changed:
            names = ", ".join(p.name for p in changed)
            app.notify(f"applied the demo fix to the working copy: {names}. Now attempt it (t).", timeout=8, markup=False)
        else:
            app.notify("the demo fix is already applied", timeout=4, markup=False)

    def action_demo_hang(self) -> None:
        from .. import demo

        demo.crash_later(5.0, kind="hang")
        self.app.notify("the running demo job deadlocks in 5 s and reads stalled 5 s later; then press w for its stacks", timeout=8, markup=False)

    def action_demo_crash_later(self) -> None:
        from .. import demo

        demo.crash_later(5.0)
        self.app.notify("the running demo job dies in 5 s: watch its fate in the attempts pane [4]", timeout=6, markup=False)
