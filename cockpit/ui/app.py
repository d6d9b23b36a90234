"""The cockpit app: wiring only.  Panes, screens, messages and the engine driver live in their own
modules; this one composes them, runs the workers and routes messages to the panes.

Threading model: every worker is *async* (asyncssh objects belong to this event loop), declared
with a group and ``exit_on_error=False``; a worker posts messages and only message handlers touch
widgets.  Each observed part is polled by one loop that waits for its previous refresh to finish
before sleeping, so polls never overlap.
"""

from __future__ import annotations

import asyncio
import difflib
import time
from typing import Any, Callable, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.widgets import Footer
from textual.worker import Worker, WorkerState

from ..config import Config
from .actions import ACTIONS, BY_ID, HOME_ROW, UIAction, action_spec, bindings
from .commands import CockpitCommands
from .driver import Driver
from .keys import TargetKeys, ViewKeys, demo_fix
from .messages import (
    ActionFinished,
    ActionRefused,
    ActionStarted,
    GpuRefreshed,
    HistoryRefreshed,
    KmsgRefreshed,
    LogBatch,
    ProcsRefreshed,
    StageEvent,
)
from .panes.gpu import GpuPane
from .panes.history import HistoryPane
from .panes.log import LogPane
from .panes.procs import ProcsPane
from .panes.status import StatusLine, StatusState
from .panes.verdict import VerdictStrip
from .screens.verdict import VerdictScreen
from .themes import DEFAULT_THEME, ThemeSet, default_variables, load_themes

__all__ = ["CockpitApp", "create_app"]

class CockpitApp(TargetKeys, ViewKeys, App[int]):
    CSS_PATH = "styles.tcss"
    TITLE = "cockpit"
    BINDINGS: ClassVar[list[Any]] = bindings(ACTIONS)
    COMMANDS = App.COMMANDS | {CockpitCommands}
    ALLOW_IN_MAXIMIZED_VIEW = "Footer, StatusLine, VerdictStrip"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]

    def __init__(self, engine: Any, *, read_only: bool = False, refresh: bool = True, demo: bool = False,
                 clock: Callable[[], float] | None = None, themes: ThemeSet | None = None, notice: str = "",
                 owns_engine: bool = False) -> None:
        super().__init__()
        self.engine = engine
        self.cfg: Config = engine.cfg
        self.read_only = read_only
        self.poll_enabled = refresh
        self.demo = demo
        self.clock = clock or time.time
        self.themes = themes if themes is not None else load_themes()
        self.notice = notice
        self.owns_engine = owns_engine
        self.driver = Driver(engine)
        self.keymap: dict[str, str] = {}
        self.last_verdict: tuple[str, Any] | None = None
        self._listener: Any = None
        ui = self.cfg.ui
        t = self.cfg.target
        self.status_state = StatusState(
            target=self.cfg.display_name, transport=t.transport,
            where=getattr(engine.transport, "description", "") or "", read_only=read_only,
            interval=ui.refresh_interval, demo=demo,
        )

    # -- composition --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        ui = self.cfg.ui
        yield StatusLine(self.status_state, self.clock, id="status-line")
        yield VerdictStrip(self.clock, id="verdict-strip")
        with Grid(id="panes"):
            yield ProcsPane(self.clock, ui.refresh_interval)
            yield LogPane(self.clock, ui.refresh_interval, ui.log_lines, history=self.driver.log_history)
            yield GpuPane(self.clock, ui.refresh_interval)
            yield HistoryPane(self.clock, ui.refresh_interval)
        yield Footer(compact=True)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return default_variables()

    def on_mount(self) -> None:
        self._apply_themes()
        self._apply_keymap()
        if self.read_only:
            self.sub_title = "READ-ONLY"
        self._listener = self.driver.stage_listener(self.post_message)
        self.engine.add_listener(self._listener)
        self.theme_changed_signal.subscribe(self, self._on_theme_changed)
        self.set_interval(1.0, self._tick)
        if self.notice:
            self.notify(self.notice, title="cockpit", timeout=8, markup=False)
        recovered = getattr(self.engine, "recovered", None) or []
        if recovered:
            ids = ", ".join(f"#{r.attempt}" for r in recovered)
            self.notify(f"attempt {ids} was left open by a cockpit that is gone: marked interrupted", severity="warning", timeout=8, markup=False)
        self.query_one("#log-view").focus()
        self.show_current()
        if self.poll_enabled:
            self.start_polling()
        else:
            self.load_history()

    async def on_unmount(self) -> None:
        self.engine.remove_listener(self._listener)
        if self.owns_engine:
            try:
                await asyncio.wait_for(self.engine.close(), 5)
            except Exception:  # closing a dead connection must not turn quitting into a traceback
                pass

    # -- themes and keys ---------------------------------------------------------------------
    def _apply_themes(self) -> None:
        for theme in self.themes.themes.values():
            self.register_theme(theme)
        for err in self.themes.errors:
            self.notify(f"{err} — theme skipped", title="theme file", severity="error", timeout=10, markup=False)
        want = self.cfg.ui.theme or DEFAULT_THEME
        if want in self.themes.themes or want in self.available_themes:
            self.theme = want
        else:
            close = difflib.get_close_matches(want, self.themes.names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(self.themes.names)})"
            self.notify(f"[ui] theme = {want!r} not found{hint}: using {DEFAULT_THEME}", severity="error", timeout=10, markup=False)
            self.theme = DEFAULT_THEME

    def _apply_keymap(self) -> None:
        km = dict(self.cfg.keymap or {})
        unknown = [k for k in km if k not in BY_ID]
        for k in unknown:
            close = difflib.get_close_matches(k, list(BY_ID), n=1)
            self.notify(f"[keymap] {k!r} is not an action id" + (f": did you mean {close[0]!r}?" if close else ""), severity="warning", timeout=10, markup=False)
            km.pop(k)
        for k, keys in list(km.items()):
            spec = BY_ID[k]
            bare = [x.strip() for x in keys.split(",") if x.strip() in HOME_ROW]
            if spec.destructive and bare:
                self.notify(f"[keymap] {k} = {keys!r}: a destructive action may not sit on a bare home-row key; kept {spec.key!r}",
                            severity="warning", timeout=10, markup=False)
                km.pop(k)
        self.keymap = km
        if km:
            self.set_keymap(km)

    def handle_bindings_clash(self, clashed_bindings: set[Binding], node: Any) -> None:
        names = ", ".join(sorted(b.id or b.action for b in clashed_bindings))
        self.notify(f"[keymap] key clash: {names} — the first one wins", severity="warning", timeout=8, markup=False)

    def action_cycle_theme(self) -> None:
        nxt = self.themes.next_after(self.theme)
        self.theme = nxt
        self.notify(f"theme: {nxt}", timeout=2, markup=False)

    def _on_theme_changed(self, theme: Any) -> None:
        self.query_one(HistoryPane).retheme()
        self.query_one(LogPane).retheme()
        self.query_one(ProcsPane).redraw()
        self.query_one(GpuPane).redraw()
        strip = self.query_one(VerdictStrip)
        strip.redraw()

    # -- what is allowed -----------------------------------------------------------------------
    def action_allowed(self, spec: UIAction) -> bool:
        if spec.acts and self.read_only:
            return False
        if spec.demo_only and not (self.demo and demo_fix() is not None):
            return False
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        spec = action_spec(action)
        if spec is None:
            return True
        if len(self.screen_stack) > 1:
            return False  # a modal is open: its keys only (a stray S or R must not stack another modal)
        return self.action_allowed(spec)

    # -- polling ---------------------------------------------------------------------------------
    def start_polling(self) -> None:
        ui = self.cfg.ui
        self._poll("procs", self.driver.procs, lambda: ui.refresh_interval)
        self._poll("gpu", self.driver.gpu, lambda: ui.refresh_interval)
        self._poll("log", self.driver.log, lambda: 0.1)
        if self.cfg.target.runtime == "pct":
            self._poll("kmsg", self.driver.kmsg, lambda: max(10.0, ui.refresh_interval * 5))
        self._poll_history()

    def _poll(self, part: str, fetch: Callable[[], Any], interval: Callable[[], float]) -> Worker[None]:
        async def loop() -> None:
            failures = 0
            while True:
                try:
                    msg = await fetch()
                    failures = 0
                except Exception as e:  # a bug in a probe must not end the polling
                    failures += 1
                    if failures == 1:
                        self.notify(f"{part} refresh crashed: {e!r}", severity="error", timeout=8, markup=False)
                    msg = None
                if msg is not None:
                    self.post_message(msg)
                idle = part == "log" and (msg is None or not msg.lines)
                await asyncio.sleep(min(30.0, interval() * (1 + failures)) if not idle else min(0.5, self.cfg.ui.refresh_interval))

        return self.run_worker(loop(), name=f"poll-{part}", group="poll", exit_on_error=False)

    @work(group="poll", exit_on_error=False, name="poll-history")
    async def _poll_history(self) -> None:
        while True:
            self.post_message(self.driver.history())
            await asyncio.sleep(self.cfg.ui.refresh_interval)

    def load_history(self) -> None:
        self.post_message(self.driver.history(force=True))

    @work(group="refresh", exclusive=True, exit_on_error=False, name="refresh-now")
    async def refresh_now(self) -> None:
        """One refresh of everything (key ``u``; tests)."""
        for fetch in (self.driver.procs, self.driver.gpu, self.driver.log):
            msg = await fetch()
            if msg is not None:
                self.post_message(msg)
        self.post_message(self.driver.history(force=True))

    def show_current(self) -> None:
        """Render whatever the observer already holds (before the first refresh)."""
        obs = self.driver.observer
        if obs.procs.collected_at is not None:
            self.post_message(ProcsRefreshed(obs.procs))
        if obs.gpu.collected_at is not None or obs.gpu.snapshot is not None:
            self.post_message(GpuRefreshed(obs.gpu))
        f = obs.log.follower
        if f is not None and len(f.ring):
            first, lines = self.driver.log_history()
            self.post_message(LogBatch(obs.log.path, first, lines, self.driver.log_errors(), view=obs.log))

    # -- message handlers: the only code that touches widgets -----------------------------------
    def on_procs_refreshed(self, msg: ProcsRefreshed) -> None:
        v = msg.view
        self.query_one(ProcsPane).show(v)
        self.query_one(StatusLine).update_part("procs", v.collected_at, v.error, v.error_layer)

    def on_gpu_refreshed(self, msg: GpuRefreshed) -> None:
        v = msg.view
        self.query_one(GpuPane).show(v)
        snap_err = getattr(v.snapshot, "error", None) if v.snapshot is not None else None
        err = v.error if v.error and v.error != snap_err and "disabled in config" not in v.error else None
        # a GPU failure seen by a successful probe is GPU data, not a stale part: the pane shows it
        self.query_one(StatusLine).update_part("gpu", v.collected_at, err, v.error_layer if err else None)

    def on_kmsg_refreshed(self, msg: KmsgRefreshed) -> None:
        v = msg.view
        if v.error and "only for runtime" not in v.error:
            self.query_one(StatusLine).update_part("kernel", v.collected_at, v.error, v.error_layer)

    def on_log_batch(self, msg: LogBatch) -> None:
        self.query_one(LogPane).feed(msg.path, msg.first_no, msg.lines, msg.matches, msg.view)
        v = msg.view
        if v is not None:
            self.query_one(StatusLine).update_part("log", v.collected_at, v.error, v.error_layer)

    def on_history_refreshed(self, msg: HistoryRefreshed) -> None:
        pane = self.query_one(HistoryPane)
        if msg.changed:
            pane.show(msg.records, msg.collected_at)
        else:
            pane.collected_at = msg.collected_at
        self.query_one(StatusLine).update_part("history", msg.collected_at)
        strip = self.query_one(VerdictStrip)
        if msg.records and strip.state == "idle":
            strip.show_record(msg.records[-1])

    def on_stage_event(self, msg: StageEvent) -> None:
        self.query_one(VerdictStrip).stage(msg.action, msg.stage)
        job = msg.stage.data.get("job") if msg.stage.data else None
        if job:  # launch recorded a job: follow its log now, not after the verdict
            self.driver.follow_job(job)

    def on_action_started(self, msg: ActionStarted) -> None:
        self.query_one(VerdictStrip).start(msg.action, msg.note)
        self.query_one(StatusLine).set_action(msg.action)

    def on_action_finished(self, msg: ActionFinished) -> None:
        self.query_one(VerdictStrip).finish(msg.action, msg.verdict, outcome=msg.outcome, attempt=msg.attempt,
                                            error=msg.error, duration_s=msg.duration_s)
        self.query_one(StatusLine).set_action(None)
        if msg.verdict is not None:
            self.last_verdict = (msg.action, msg.verdict)
        self.load_history()
        if msg.outcome:
            sev = {"passed": "information", "failed": "error", "untested": "warning"}.get(msg.outcome, "warning")
            from .format import outcome_text

            self.notify(outcome_text(msg.outcome, msg.verdict.layer.value if msg.verdict is not None and msg.verdict.layer else None),
                        title=f"attempt #{msg.attempt}", severity=sev, timeout=6, markup=False)  # type: ignore[arg-type]

    def on_action_refused(self, msg: ActionRefused) -> None:
        self.query_one(VerdictStrip).refused(msg.action, msg.reason)
        self.query_one(StatusLine).set_action(getattr(self.engine, "current_action", None))
        self.notify(msg.reason, title=f"{msg.action} refused", severity="warning", timeout=6, markup=False)

    @on(HistoryPane.AttemptChosen)
    def _attempt_chosen(self, msg: HistoryPane.AttemptChosen) -> None:
        rec = self.query_one(HistoryPane).record(msg.attempt)
        if rec is not None:
            self.push_screen(VerdictScreen(rec, clock=self.clock))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        w = event.worker
        if event.state is WorkerState.ERROR:
            err = w.error
            self.notify(f"{w.name or w.group}: {err!r}", title="cockpit error", severity="error", timeout=10, markup=False)
            if w.group == "action":
                self.post_message(ActionFinished(w.name or "action", None, error=repr(err)))

    def _tick(self) -> None:
        for cls in (ProcsPane, GpuPane, LogPane, HistoryPane):
            pane = self.query_one(cls)
            pane.tick()



def create_app(cfg: Config, *, engine: Any = None, read_only: bool = False, refresh: bool = True, demo: bool | None = None,
               clock: Callable[[], float] | None = None, themes: ThemeSet | None = None, notice: str = "") -> CockpitApp:
    """The app for ``cfg`` (shared by ``cockpit`` and the tests, which inject an engine)."""
    owns = engine is None
    if engine is None:
        from ..core.engine import Engine

        engine = Engine(cfg)
    if demo is None:
        demo = cfg.path is None and cfg.display_name == "demo" and cfg.target.transport == "local"
    return CockpitApp(engine, read_only=read_only, refresh=refresh, demo=demo, clock=clock, themes=themes,
                      notice=notice, owns_engine=owns)
