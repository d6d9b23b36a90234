"""The cockpit app: wiring only.  Panes, screens, messages and the engine driver live in their own
modules; this one composes them, runs the workers and routes messages to the panes.

Threading model: every worker is *async* (asyncssh objects belong to this event loop), declared
with a group and ``exit_on_error=False``; a worker posts messages and only message handlers touch
widgets.  Each observed part is polled by one loop that waits for its previous refresh to finish
before sleeping, so polls never overlap.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.containers import Grid
from textual.notifications import SeverityLevel
from textual.worker import Worker, WorkerState

from ..core.config import Config
from ..core.keymap import ACTIONS, UIAction, action_spec
from ..core.notify import Notifier
from ..core.redact import Redactor
from .adapter import EventAdapter
from .bindings import bindings
from .commands import CockpitCommands
from .driver import Driver
from .guard import while_mounted
from .keys import TargetKeys, demo_fix
from .leaks import LeanFooter, unpin_styles_caches
from .live import LoopRunner, Reloaders
from .messages import (
    ActionFinished,
    ActionRefused,
    ActionStarted,
    FateChanged,
    GpuRefreshed,
    HistoryRefreshed,
    KmsgRefreshed,
    LogBatch,
    LoopNotice,
    ProcsRefreshed,
    SourceChanged,
    StageEvent,
)
from .metrics_keys import MetricsKeys
from .pacing import Pacer, signature
from .panes.gpu import GpuPane
from .panes.history import HistoryPane
from .panes.log import LogPane
from .panes.metrics import EngineMetrics, MetricsPane
from .panes.procs import ProcsPane
from .panes.status import StatusLine, StatusState
from .panes.verdict import VerdictStrip
from .settings import SettingsMixin
from .shown import set_share, shown, shown_block
from .target_keys import TargetSwitch
from .themes import ThemeSet, default_variables, load_themes
from .user_keys import UserActionKeys

log = logging.getLogger(__name__)


__all__ = ["CockpitApp", "create_app"]

class CockpitApp(SettingsMixin, TargetKeys, TargetSwitch, MetricsKeys, UserActionKeys, App[int]):
    CSS_PATH = "styles.tcss"
    TITLE = "cockpit"
    BINDINGS: ClassVar[list[Any]] = bindings(ACTIONS)
    COMMANDS = App.COMMANDS | {CockpitCommands}
    ALLOW_IN_MAXIMIZED_VIEW = "Footer, StatusLine, VerdictStrip"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]

    def __init__(self, engine: Any, *, read_only: bool = False, refresh: bool = True, demo: bool = False,
                 clock: Callable[[], float] | None = None, themes: ThemeSet | None = None, notice: str = "",
                 owns_engine: bool = False, live: bool = True, share: bool = False, source: str = "") -> None:
        unpin_styles_caches()  # Textual's StylesCache leak (see leaks.py)
        super().__init__()
        self.engine = engine
        self.cfg: Config = engine.cfg
        #: share mode (``cockpit --share``): read-only, and every remote text shown redacted (ui/shown.py)
        self.share = share
        set_share(Redactor.from_config(self.cfg) if share else None)
        read_only = read_only or share
        self.read_only = read_only
        if read_only:
            engine.read_only = True  # a viewer's engine never writes the journal (core/engine.py)
        #: the journal's write problem last shown (its start time), so a toast says it once
        self._journal_fault_since: float | None = None
        self.poll_enabled = refresh
        self.demo = demo
        self.clock = clock or time.time
        self.themes = themes if themes is not None else load_themes()
        self.notice = notice
        self.owns_engine = owns_engine
        self.driver = Driver(engine)
        self.load_user_actions()
        self.keymap: dict[str, str] = {}
        self.last_verdict: tuple[str, Any] | None = None
        self.notifier = Notifier(self.cfg, read_only=read_only, bell=lambda: self.bell(),
                                 report=lambda text: self.notify(text, title="notification", severity="warning", timeout=10, markup=False))
        self._listener: Any = None
        #: the edit → attempt loop (None when [deploy] source does not exist, or ``live`` is False)
        self.loop_runner: LoopRunner | None = None
        src = self.cfg.deploy_source
        if live and src is not None and src.exists():
            self.loop_runner = LoopRunner(engine, self.cfg, self.driver, self.post_message,
                                          enabled=bool(self.cfg.loop.attempt_on_save) and not read_only)
        #: live reload of the config file and the theme files (None when there is no config file)
        self.reloaders: Reloaders | None = None
        if live and self.cfg.path is not None:
            self.reloaders = Reloaders(self.cfg, [v for v in self.themes.sources.values() if not v.startswith("<")], self.post_message)
        ui = self.cfg.ui
        t = self.cfg.target
        self.status_state = StatusState(
            target=self.cfg.display_name, transport=t.transport,
            where=getattr(engine.transport, "description", "") or "", read_only=read_only, shared=share,
            interval=ui.refresh_interval, demo=demo,
            # the file in use, always on the line (``./cockpit.toml``; ``demo`` for the built-in one)
            config=source or ("demo" if demo else str(self.cfg.path or "")),
        )
        if demo:
            self.title = "cockpit · demo"

    # -- composition --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        ui = self.cfg.ui
        yield StatusLine(self.status_state, self.clock, id="status-line")
        if self.several_targets():
            yield self.target_strip()
        yield VerdictStrip(self.clock, id="verdict-strip")
        with Grid(id="panes"):
            yield ProcsPane(self.clock, ui.refresh_interval)
            yield LogPane(self.clock, ui.refresh_interval, ui.log_lines, history=self.driver.log_history)
            yield GpuPane(self.clock, ui.refresh_interval)
            yield MetricsPane(self.clock, ui.refresh_interval, EngineMetrics(self.engine))  # in the GPUs' place on 5
            yield HistoryPane(self.clock, ui.refresh_interval)
        yield LeanFooter(compact=True)  # Textual's Footer leaks its keys on every modal (see leaks.py)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return default_variables()

    def on_mount(self) -> None:
        self._apply_themes()
        self._apply_keymap()
        self.bind_user_actions()
        if self.read_only:
            self.sub_title = "SHARED · READ-ONLY · secrets hidden" if self.share else "READ-ONLY"
        self._unsubscribe = self.engine.subscribe(EventAdapter(self.post_message))
        # verdicts and fate news → bell, tmux, [notify] command and webhook; nothing in --read-only
        self._notifier_off = self.notifier.attach(self.engine)
        if not self.read_only:
            self.engine.ask = self.ask_yes_no
        self.engine.resume_following()
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
            self.start_target_watch()
        else:
            self.load_history()
        if self.loop_runner is not None:
            self.query_one(StatusLine).set_source([], self.loop_runner.enabled)
            self.run_worker(self.loop_runner.run(), name="attempt-loop", group="loop", exit_on_error=False)
        if self.reloaders is not None:
            self.run_worker(self.reloaders.run(), name="live-reload", group="reload", exit_on_error=False)

    async def on_unmount(self) -> None:
        self._unsubscribe()
        self._notifier_off()
        await self.notifier.drain(min(3.0, self.cfg.notify.timeout))
        if self.owns_engine:
            try:
                await asyncio.wait_for(self.engine.close(), 5)
            except Exception:  # noqa: BLE001 - closing a dead connection must not turn quitting into a traceback; debug-logged
                log.debug("closing the engine failed", exc_info=True)

    # -- what is allowed -----------------------------------------------------------------------
    def action_allowed(self, spec: UIAction) -> bool:
        if spec.acts and self.read_only:
            return False
        if spec.demo_only and not (self.demo and demo_fix() is not None):
            return False
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        spec = action_spec(action) if action != "user_action" else self.user_actions.get(str(parameters[0]) if parameters else "")
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
        self._poll("log", self.driver.log, lambda: ui.refresh_interval)
        if self.cfg.target.runtime == "pct":
            self._poll("kmsg", self.driver.kmsg, lambda: max(10.0, ui.refresh_interval * 5))
        self._poll_history()

    def _poll(self, part: str, fetch: Callable[[], Any], interval: Callable[[], float]) -> Worker[None]:
        # adaptive refresh (ui/pacing.py): calm parts back off, a slow link is not probed back to
        # back, an action speeds everything up
        pacer = Pacer(interval, busy=lambda: self.status_state.action is not None)

        async def loop() -> None:
            failures = 0
            while True:
                t0 = time.monotonic()
                try:
                    msg = await fetch()
                    failures = 0
                except Exception as e:  # noqa: BLE001 - a bug in a probe must not end the polling; notified (first of a run), debug-logged
                    log.debug("%s refresh crashed", part, exc_info=True)
                    failures += 1
                    if failures == 1:
                        self.notify(f"{part} refresh crashed: {e!r}", severity="error", timeout=8, markup=False)
                    msg = None
                if msg is not None:
                    self.post_message(msg)
                if part == "log":
                    await self._log_pause(pacer, msg, failures)
                    continue
                if msg is not None:
                    pacer.observe(signature(msg))
                await asyncio.sleep(pacer.wait(time.monotonic() - t0, failures))

        return self.run_worker(loop(), name=f"poll-{part}", group="poll", exit_on_error=False)

    async def _log_pause(self, pacer: Pacer, msg: Any, failures: int) -> None:
        """Between two log polls: 0.1 s while lines flow; half a second for a while after; then, on
        a quiet log, a remote ``tail -F`` that returns when it changes or after 10 s (a quiet
        stretch is posted as a fresh view): one poll per 10 s instead of two per second."""
        if failures:
            await asyncio.sleep(pacer.wait(failures=failures))
            return
        period = pacer.period()
        wait = pacer.log_wait(msg is not None and bool(msg.lines))
        if wait < period:
            await asyncio.sleep(wait)
            return
        # one wait, then one poll (which also catches what a wait cannot: a truncated file)
        state, quiet = await self.driver.log_wait(max(10.0, period * 2.5))
        if quiet is not None:
            self.post_message(quiet)  # watched and unchanged: fresh
        elif state != "changed":  # it cannot be waited for here: poll at the usual pace
            await asyncio.sleep(wait)

    @work(group="poll", exit_on_error=False, name="poll-history")
    async def _poll_history(self) -> None:
        while True:
            self.post_message(self.driver.history())
            await asyncio.sleep(self.cfg.ui.refresh_interval)

    @while_mounted
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
    @while_mounted
    def on_procs_refreshed(self, msg: ProcsRefreshed) -> None:
        v = msg.view
        self.query_one(ProcsPane).show(v)
        self.query_one(StatusLine).update_part("procs", v.collected_at, v.error, v.error_layer)

    @while_mounted
    def on_gpu_refreshed(self, msg: GpuRefreshed) -> None:
        v = msg.view
        self.query_one(GpuPane).show(v)
        snap_err = getattr(v.snapshot, "error", None) if v.snapshot is not None else None
        err = v.error if v.error and v.error != snap_err and "disabled in config" not in v.error else None
        # a GPU failure seen by a successful probe is GPU data, not a stale part: the pane shows it
        self.query_one(StatusLine).update_part("gpu", v.collected_at, err, v.error_layer if err else None)
        if v.snapshot is not None:
            self._show_modes(polled=("gpu",))

    @while_mounted
    def on_kmsg_refreshed(self, msg: KmsgRefreshed) -> None:
        v = msg.view
        if v.error and "only for runtime" not in v.error:
            self.query_one(StatusLine).update_part("kernel", v.collected_at, v.error, v.error_layer)
        elif v.collected_at is not None:
            self._show_modes()

    @while_mounted
    def on_log_batch(self, msg: LogBatch) -> None:
        self.query_one(LogPane).feed(msg.path, msg.first_no, msg.lines, msg.matches, msg.view)
        v = msg.view
        if v is not None:
            self.query_one(StatusLine).update_part("log", v.collected_at, v.error, v.error_layer)
        self._show_modes()

    def _show_modes(self, polled: tuple[str, ...] = ()) -> None:
        """Say on the status line how each part that can stream is read now: the observer's streams
        are the one source (not the refresh that came in: a streamed GPU pane still runs its full
        probe every apps_interval, which is no fall-back to polling).  ``polled``: parts shown as
        polled when no stream was ever started for them (``[gpu] stream = false``)."""
        streams = getattr(self.driver.observer, "streams", None)
        modes = streams.modes() if streams is not None else {}
        line = self.query_one(StatusLine)
        for part, (mode, _why) in modes.items():
            line.set_mode(part, mode)
        for part in polled:
            if part not in modes:
                line.set_mode(part, "poll")

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None,
               markup: bool = False) -> None:
        """Every toast.  Its text is often remote or job text (a fate's cause, a refusal, an error):
        shown as data, never markup (``markup`` is ignored), with no escape or control character, and
        in share mode redacted too (an error may quote a command line)."""
        super().notify(shown_block(message), title=shown(title), severity=severity, timeout=timeout, markup=False)

    @while_mounted
    def on_history_refreshed(self, msg: HistoryRefreshed) -> None:
        self._journal_state(msg)
        pane = self.query_one(HistoryPane)
        if msg.changed:
            pane.show(msg.records, msg.collected_at)
        else:
            pane.collected_at = msg.collected_at
        self.query_one(StatusLine).update_part("history", msg.collected_at)
        strip = self.query_one(VerdictStrip)
        if msg.records and strip.state == "idle":
            strip.show_record(msg.records[-1])

    def _journal_state(self, msg: HistoryRefreshed) -> None:
        """A journal that cannot be written: a ``config`` problem in the status line, and a toast
        when it starts and when the queued records are written after all."""
        fault = msg.journal_fault
        self.query_one(StatusLine).update_part("journal", msg.collected_at, fault.problem if fault else None, "config" if fault else None)
        if fault is not None and fault.since != self._journal_fault_since:
            self._journal_fault_since = fault.since
            self.notify(fault.message, title="journal not written", severity="error", timeout=15, markup=False)
        elif fault is None and self._journal_fault_since is not None:
            self._journal_fault_since = None
            self.notify("the journal is written again: every queued record is in it", title="journal", timeout=6, markup=False)

    @while_mounted
    def on_stage_event(self, msg: StageEvent) -> None:
        self.query_one(VerdictStrip).stage(msg.action, msg.stage)

    @while_mounted
    def on_fate_changed(self, msg: FateChanged) -> None:
        """A job's fate after its verdict: the history shows it; a passed job that died is news."""
        from ..core.fate import story

        self.load_history()
        if msg.fate.state in ("running", "stopped") or msg.outcome != "passed" or self.read_only:
            return  # stopped: the user just did it; a failed attempt's job dying is no news
        text = f"#{msg.attempt} {story(msg.outcome, None, msg.fate)}"
        self.notify(text, title="the job's fate", severity="error" if msg.news else "information", timeout=10, markup=False)

    async def ask_yes_no(self, title: str, detail: str) -> bool:
        """The engine's question to the person at the keyboard (e.g. stop strays?), as a confirm dialog."""
        from .screens.confirm import ConfirmScreen

        ok = await self.push_screen_wait(ConfirmScreen(title, detail, "", yes="Stop them"))
        return bool(ok)

    @while_mounted
    def on_action_started(self, msg: ActionStarted) -> None:
        self.query_one(VerdictStrip).start(msg.action, msg.note)
        self.query_one(StatusLine).set_action(msg.action)

    @while_mounted
    def on_action_finished(self, msg: ActionFinished) -> None:
        self.query_one(VerdictStrip).finish(msg.action, msg.verdict, outcome=msg.outcome, attempt=msg.attempt,
                                            error=msg.error, duration_s=msg.duration_s)
        self.query_one(StatusLine).set_action(None)
        if msg.verdict is not None:
            self.last_verdict = (msg.action, msg.verdict)
        self.load_history()
        if msg.action == "deploy" and msg.verdict is not None and msg.verdict.failed_stage is None and self.loop_runner is not None:
            self.loop_runner.mark_deployed()  # a manual deploy: what is on disk is what the target has
            self.post_message(self.loop_runner.snapshot())
        if msg.result is not None:
            self._verdict_landed(msg)
        elif msg.outcome:
            sev = {"passed": "information", "failed": "error", "untested": "warning"}.get(msg.outcome, "warning")
            from .format import outcome_text

            self.notify(outcome_text(msg.outcome, msg.verdict.layer.value if msg.verdict is not None and msg.verdict.layer else None),
                        title=f"attempt #{msg.attempt}", severity=sev, timeout=6, markup=False)  # type: ignore[arg-type]

    def _verdict_landed(self, msg: ActionFinished) -> None:
        """An attempt's verdict: a one-line toast (the bell, tmux and the hooks: the notifier); nothing in --read-only."""
        if self.read_only:
            return
        from ..core.notify import verdict_line

        sev = {"passed": "information", "failed": "error", "untested": "warning"}.get(msg.outcome or "", "warning")
        self.notify(verdict_line(msg.result, prefix=""), title=f"attempt #{msg.attempt}", severity=sev, timeout=6, markup=False)  # type: ignore[arg-type]

    @while_mounted
    def on_source_changed(self, msg: SourceChanged) -> None:
        self.query_one(StatusLine).set_source(sorted(msg.pending), msg.on_save, msg.state, msg.queued)

    def on_loop_notice(self, msg: LoopNotice) -> None:
        self.notify(msg.text, title=msg.title, severity=msg.severity, timeout=8, markup=False)  # type: ignore[arg-type]

    @while_mounted
    def on_action_refused(self, msg: ActionRefused) -> None:
        self.query_one(VerdictStrip).refused(msg.action, msg.reason)
        self.query_one(StatusLine).set_action(getattr(self.engine, "current_action", None))
        self.notify(msg.reason, title=f"{msg.action} refused", severity="warning", timeout=6, markup=False)

    @on(HistoryPane.AttemptChosen)
    def _attempt_chosen(self, msg: HistoryPane.AttemptChosen) -> None:
        rec = self.query_one(HistoryPane).record(msg.attempt)
        if rec is not None:
            self.push_screen(self.verdict_screen(rec))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        w = event.worker
        if event.state is WorkerState.ERROR:
            err = w.error
            self.notify(f"{w.name or w.group}: {err!r}", title="cockpit error", severity="error", timeout=10, markup=False)
            if w.group == "action":
                self.post_message(ActionFinished(w.name or "action", None, error=repr(err)))

    @while_mounted
    def _tick(self) -> None:
        for cls in (ProcsPane, GpuPane, LogPane, HistoryPane):
            pane = self.query_one(cls)
            pane.tick()
        strip = self.query_one(VerdictStrip)
        if strip.state == "running":
            strip.redraw()  # the elapsed time and a waiting stage's bar move on



def create_app(cfg: Config, *, engine: Any = None, read_only: bool = False, refresh: bool = True, demo: bool | None = None,
               clock: Callable[[], float] | None = None, themes: ThemeSet | None = None, notice: str = "",
               live: bool = True, share: bool = False, source: str = "") -> CockpitApp:
    """The app for ``cfg`` (shared by ``cockpit`` and the tests, which inject an engine).
    ``share``: read-only, with secrets hidden on every pane and screen (``cockpit --share``)."""
    owns = engine is None
    if engine is None:
        from ..core.engine import Engine

        engine = Engine(cfg, read_only=read_only or share)  # a viewer never writes the journal
    if demo is None:
        demo = cfg.path is None and cfg.display_name == "demo" and cfg.target.transport == "local"
    return CockpitApp(engine, read_only=read_only, refresh=refresh, demo=demo, clock=clock, themes=themes,
                      notice=notice, owns_engine=owns, live=live, share=share, source=source)
