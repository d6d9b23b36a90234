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
from typing import ClassVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical
from textual.dom import DOMNode
from textual.notifications import SeverityLevel
from textual.worker import Worker, WorkerState

from ..core.config import Config
from ..core.face import EngineFace
from ..core.keymap import ACTIONS, UIAction, action_spec
from ..core.layers import Verdict
from ..core.notify import Notifier
from ..core.redact import Redactor
from .adapter import EventAdapter
from .bindings import bindings
from .commands import CockpitCommands
from .driver import Driver
from .guard import while_mounted
from .heap import FREEZE_AFTER_S, freeze_heap
from .host import CockpitHost
from .keys import TargetActions, demo_fix
from .leaks import LeanFooter, unpin_styles_caches
from .loop_runner import LoopRunner, Reloaders
from .messages import (
    ActionFinished,
    ActionRefused,
    ActionStarted,
    CompileChanged,
    ConfigInvalid,
    ConfigReloaded,
    FateChanged,
    GpuRefreshed,
    HistoryRefreshed,
    KmsgRefreshed,
    LogBatch,
    LoopNotice,
    ProcsRefreshed,
    SourceChanged,
    StageEvent,
    ThemeFileInvalid,
    ThemeFileReloaded,
    UserActionDone,
)
from .panes.base import STYLE_CLASSES
from .panes.gpu import GpuPane
from .panes.history import HistoryPane
from .panes.log import LogPane
from .panes.metrics import EngineMetrics, MetricsPane
from .panes.procs import ProcsPane
from .panes.status import StatusLine, StatusState
from .panes.verdict import VerdictStrip
from .polling import Polling
from .routes import route
from .screens.backdrop import BackdropModal
from .settings import Settings
from .shown import set_share, shown, shown_block
from .target_keys import Targets
from .themes import ThemeSet, default_variables, load_themes
from .user_keys import UserActions
from .views import Views

log = logging.getLogger(__name__)

#: a verdict's outcome → its toast's severity
_SEVERITY: dict[str, SeverityLevel] = {"passed": "information", "failed": "error", "untested": "warning"}


__all__ = ["CockpitApp", "create_app"]

class CockpitApp(CockpitHost):
    """The app: its state, the panes, the message handlers, and six controllers it holds (plain
    objects, each given the app): ``actions`` (keys that act on the target, :mod:`.keys`), ``views``
    (keys that change what is shown, :mod:`.views`), ``targets`` (:mod:`.target_keys`), ``settings``
    (themes, keymap, live reload, :mod:`.settings`), ``user`` (the user's ``[[actions]]``,
    :mod:`.user_keys`) and ``polling`` (:mod:`.polling`).

    Textual runs a binding's action as ``action_<name>`` on a namespace that is a DOM node: the
    focused widget's chain, the screen or the app (``app.``/``screen.``/``focused.`` prefixes); a
    plain object cannot be one.  So the app keeps one thin ``action_<name>`` per key, generated once
    below the class by :func:`.routes.route`: each controller's ``action_*`` methods, and for every
    engine action of the registry ``actions.act(ID)``, so a new engine action needs only its entries
    in the core's action table and key registry.  Message handlers (``on_*``) are written here and
    hand the few that belong to a controller on to it.
    """

    CSS_PATH = "styles.tcss"
    TITLE = "cockpit"
    #: the text styles of Python-built text (``.cs > .layer--app`` in styles.tcss), held once by the
    #: app rather than by every widget that uses them: see :mod:`.panes.base`
    COMPONENT_CLASSES: ClassVar[set[str]] = set(STYLE_CLASSES)
    DEFAULT_CLASSES = "cs"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings(ACTIONS)]
    COMMANDS = App.COMMANDS | {CockpitCommands}
    ALLOW_IN_MAXIMIZED_VIEW = "Footer, #bars"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]

    #: set by a target switch (``>``): :func:`cockpit.cli.tui.run_tui` starts the app on that target next
    switch_to: str | None = None
    #: freeze the heap a second after start (``cockpit`` itself; never in tests, which start many apps
    #: in one process): see :func:`freeze_heap`
    freeze_gc: bool = False
    #: whether the terminal reports the mouse to cockpit (``m`` switches it; see :func:`.copy.set_mouse_capture`)
    mouse_reporting: bool = True
    #: the controllers that :class:`.host.CockpitHost` declares by what the others use of them
    actions: TargetActions
    targets: Targets
    user: UserActions
    polling: Polling

    def __init__(self, engine: EngineFace, *, read_only: bool = False, refresh: bool = True, demo: bool = False,
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
        self.keymap: dict[str, str] = {}
        self.last_verdict: tuple[str, Verdict] | None = None
        self.notifier = Notifier(self.cfg, read_only=read_only, bell=lambda: self.bell(),
                                 report=lambda text: self.notify(text, title="notification", severity="warning", timeout=10, markup=False))
        #: the edit → attempt loop (None when [deploy] source does not exist, or ``live`` is False)
        self.loop_runner: LoopRunner | None = None
        src = self.cfg.deploy_source
        if live and src is not None and src.exists():
            self.loop_runner = LoopRunner(engine, self.cfg, self.post_message,
                                          enabled=bool(self.cfg.loop.attempt_on_save) and not read_only)
        #: live reload of the config file and the theme files (None when there is no config file)
        self.reloaders: Reloaders | None = None
        if live and self.cfg.path is not None:
            self.reloaders = Reloaders(self.cfg, [v for v in self.themes.sources.values() if not v.startswith("<")], self.post_message)
        ui = self.cfg.ui
        t = self.cfg.target
        self.status_state = StatusState(
            target=self.cfg.display_name, transport=t.transport,
            where=engine.transport.description, read_only=read_only, shared=share,
            interval=ui.refresh_interval, demo=demo,
            # the file in use, always on the line (``./cockpit.toml``; ``demo`` for the built-in one)
            config=source or ("demo" if demo else str(self.cfg.path or "")),
        )
        if demo:
            self.title = "cockpit · demo"
        self.actions, self.views, self.targets = TargetActions(self), Views(self), Targets(self)
        self.settings, self.user, self.polling = Settings(self), UserActions(self), Polling(self)
        self.settings.preselect_theme()

    # -- composition --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        ui = self.cfg.ui
        # the bars stay on top in a zoomed view too: Textual puts the maximized pane first among the
        # screen's children it keeps, so the bars are docked (one container: two docks would overlap)
        with Vertical(id="bars"):
            yield StatusLine(self.status_state, self.clock, id="status-line")
            if self.targets.several():
                yield self.targets.strip()
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
        self.settings.apply_themes()
        self.settings.apply_keymap()
        self.user.bind()
        if self.read_only:
            self.sub_title = "SHARED · READ-ONLY · secrets hidden" if self.share else "READ-ONLY"
        self._unsubscribe = self.engine.subscribe(EventAdapter(self.post_message))
        # verdicts and fate news → bell, tmux, [notify] command and webhook; nothing in --read-only
        self._notifier_off = self.notifier.attach(self.engine)
        if not self.read_only:
            self.engine.ask = self.ask_yes_no
        self.engine.resume_following()
        if self.engine.job is not None and self.engine.job.log_path:  # its log is read soon: never "no job launched yet"
            self.query_one(LogPane).waiting_for = self.engine.job.log_path
        self.theme_changed_signal.subscribe(self, self.settings.theme_changed)
        self.set_interval(1.0, self._tick)
        if self.freeze_gc:
            self.set_timer(FREEZE_AFTER_S, freeze_heap)
        if self.notice:
            self.notify(self.notice, title="cockpit", timeout=8, markup=False)
        recovered = self.engine.recovered
        if recovered:
            ids = ", ".join(f"#{r.attempt}" for r in recovered)
            self.notify(f"attempt {ids} was left open by a cockpit that is gone: marked interrupted", severity="warning", timeout=8, markup=False)
        self.query_one("#log-view").focus()
        self.polling.show_current()
        if self.poll_enabled:
            self.polling.start()
            self.targets.start_poll()
        else:
            self.polling.load_history()
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
        spec = action_spec(action) if action != "user_action" else self.user.actions.get(str(parameters[0]) if parameters else "")
        if spec is None:
            return True
        if len(self.screen_stack) > 1:
            return False  # a modal is open: its keys only (a stray S or R must not stack another modal)
        return self.action_allowed(spec)

    def export_screenshot(self, *, title: str | None = None, simplify: bool = False) -> str:
        """Textual's screenshot; over a modal, with the screen behind it as it is now (see screens/backdrop.py)."""
        if isinstance(self.screen, BackdropModal):
            self.screen.renew_backdrop()
        return super().export_screenshot(title=title, simplify=simplify)

    def refresh_now(self) -> Worker[None]:
        """One refresh of everything (key ``u``; tests)."""
        return self.polling.refresh_now()

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
        snap_err = v.snapshot.error if v.snapshot is not None else None
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
        modes = self.driver.observer.streams.modes()
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
    def on_compile_changed(self, msg: CompileChanged) -> None:
        from .screens.compile import CompileScreen

        scr = self.screen
        if isinstance(scr, CompileScreen) and scr.attempt == msg.event.attempt:
            scr.show(msg.event.summary, msg.event.final)

    @while_mounted
    def on_fate_changed(self, msg: FateChanged) -> None:
        """A job's fate after its verdict: the history shows it; a passed job that died is news."""
        from ..core.fate_record import story

        self.polling.load_history()
        self.query_one(VerdictStrip).show_fate(msg.attempt, msg.fate)  # the strip tells the story's end too
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
        self.polling.load_history()
        if msg.action == "deploy" and msg.verdict is not None and msg.verdict.failed_stage is None and self.loop_runner is not None:
            self.loop_runner.mark_deployed()  # a manual deploy: what is on disk is what the target has
            self.post_message(self.loop_runner.snapshot())
        if msg.result is not None:
            self._verdict_landed(msg)
        elif msg.outcome:
            sev = _SEVERITY.get(msg.outcome, "warning")
            from .format import outcome_text

            self.notify(outcome_text(msg.outcome, msg.verdict.layer.value if msg.verdict is not None and msg.verdict.layer else None),
                        title=f"attempt #{msg.attempt}", severity=sev, timeout=6, markup=False)

    def _verdict_landed(self, msg: ActionFinished) -> None:
        """An attempt's verdict: a one-line toast (the bell, tmux and the hooks: the notifier); nothing in --read-only."""
        if self.read_only:
            return
        from ..core.notify import verdict_line

        sev = _SEVERITY.get(msg.outcome or "", "warning")
        self.notify(verdict_line(msg.result, prefix=""), title=f"attempt #{msg.attempt}", severity=sev, timeout=6, markup=False)

    @while_mounted
    def on_source_changed(self, msg: SourceChanged) -> None:
        self.query_one(StatusLine).set_source(sorted(msg.pending), msg.on_save, msg.state, msg.queued)

    def on_loop_notice(self, msg: LoopNotice) -> None:
        self.notify(msg.text, title=msg.title, severity=msg.severity, timeout=8, markup=False)

    # -- what a controller handles ---------------------------------------------------------------
    def on_config_reloaded(self, msg: ConfigReloaded) -> None:
        self.settings.config_reloaded(msg)

    def on_config_invalid(self, msg: ConfigInvalid) -> None:
        self.settings.config_invalid(msg)

    def on_theme_file_reloaded(self, msg: ThemeFileReloaded) -> None:
        self.settings.theme_file_reloaded(msg)

    def on_theme_file_invalid(self, msg: ThemeFileInvalid) -> None:
        self.settings.theme_file_invalid(msg)

    def handle_bindings_clash(self, clashed_bindings: set[Binding], node: DOMNode) -> None:
        self.settings.bindings_clash(clashed_bindings)

    def on_user_action_done(self, msg: UserActionDone) -> None:
        self.user.done(msg)

    @while_mounted
    def on_action_refused(self, msg: ActionRefused) -> None:
        self.query_one(VerdictStrip).refused(msg.action, msg.reason)
        self.query_one(StatusLine).set_action(self.engine.current_action)
        self.notify(msg.reason, title=f"{msg.action} refused", severity="warning", timeout=6, markup=False)

    @on(HistoryPane.AttemptChosen)
    def _attempt_chosen(self, msg: HistoryPane.AttemptChosen) -> None:
        rec = self.query_one(HistoryPane).record(msg.attempt)
        if rec is not None:
            self.push_screen(self.views.verdict_screen(rec))

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


def create_app(cfg: Config, *, engine: EngineFace | None = None, read_only: bool = False, refresh: bool = True, demo: bool | None = None,
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


route(CockpitApp)
