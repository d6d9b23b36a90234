"""Remote text is data, never markup or escapes: a property test over every pane and screen (issue 10).

Arbitrary text (markup such as ``[/]``, ``[link=…]``, ``[bold red]``, ``[@click=app.quit]``; ANSI
CSI/OSC escapes; bidi controls; wide, zero-width and combining characters; very long lines) is fed
through the code paths the engine's observations and events take: raw ``ps`` and ``nvidia-smi``
output through the probes' parsers, raw log bytes through the log follower, journal events through
the journal's own write and read, stages and verdicts as the engine publishes them.  For each
example the test asserts that

(a) nothing crashes (the app is still running, the full screen renders),
(b) every text is shown verbatim, as :func:`cockpit.core.text.sanitize` makes it visible, in the
    widget's rendered content (table cells, ``Static`` content, border titles, log lines, toasts,
    the verdict and help screens' renderables): markup is never parsed,
(c) no raw ESC (or any other control or bidi character) and no hyperlink or click action from the
    text reaches the terminal: every segment of the composed screen is checked.

One app runs for each test, in its own thread and event loop; Hypothesis drives the examples from
the test's thread and each example runs as a coroutine inside that app (``AppThread.call``), so the
app is built once per test, not once per example.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Group
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual._context import active_app

from cockpit.core import events as core_events
from cockpit.core.actions.stacks import StackDump, parse_py_spy
from cockpit.core.fate import Fate
from cockpit.core.journal.records import _dumps, _parse, fold
from cockpit.core.layers import Evidence, Finding, Layer, Severity, Stage, Status, Verdict
from cockpit.core.observe import GPUView, ProcsView
from cockpit.core.probes import gpu as gpu_probe
from cockpit.core.probes import procs as procs_probe
from cockpit.core.probes.logs import sanitize as log_sanitize
from cockpit.core.text import sanitize
from cockpit.ui.app import CockpitApp, create_app
from cockpit.ui.format import one_line
from cockpit.ui.messages import (
    ActionFinished,
    ActionRefused,
    ActionStarted,
    FateChanged,
    GpuRefreshed,
    HistoryRefreshed,
    LogBatch,
    LoopNotice,
    ProcsRefreshed,
    SourceChanged,
    StageEvent,
)
from cockpit.ui.panes import StatusLine
from cockpit.ui.panes.gpu import GpuCard, GpuPane
from cockpit.ui.panes.history import HistoryPane
from cockpit.ui.panes.log import LogPane
from cockpit.ui.panes.procs import ProcsPane
from cockpit.ui.panes.verdict import VerdictStrip
from cockpit.ui.screens import ConfirmScreen, HelpScreen, HypothesisScreen, VerdictScreen
from cockpit.ui.screens.stacks import StacksScreen
from tests.examples import examples as quick_or_full
from tests.test_ui_support import FIXED, framed_log, local_config, make_engine

SIZE = (120, 40)

# -- hostile text ------------------------------------------------------------------------------------

MARKUP = ["[", "]", "[/]", "[/tmp]", "[/]/x", "[bold red]", "[/bold red]", "[b]x[/b]", "[link=https://evil.example]",
          "[/link]", "[@click=app.quit]", "[@click=app.bell]x[/]", "[rank0]:", "[$accent]", "[on red]", "\\[", "\\",
          "[not a tag", "]]", "[[/]]", "[red", "$accent", "{}", "%s", "[i]"]
ESCAPES = ["\x1b[31m", "\x1b[0m", "\x1b[2J", "\x1b[1;1H", "\x1b]2;pwned\x07", "\x1b]0;title\x1b\\", "\x1b]8;;http://x\x1b\\",
           "\x1b]52;c;ZXZpbA==\x07", "\x1bP+q\x1b\\", "\x9b31m", "\x1b", "\x1b]2;unterminated", "\x07", "\x08", "\x00",
           "\r", "\x7f", "\x85", "\x0b", "\x0c"]
UNICODE = ["\u202e", "\u2066", "\u2069", "\u200f", "\u200e", "\u061c", "\u200b", "\u200d", "\u2060", "\ufeff", "\u2028",
           "\u2029", "中文", "日本語テキスト", "👩\u200d💻", "🇺🇦", "e\u0301", "\U0001F600", "\t", " ", "  ", "ß", "İ", "\u00ad"]
LONG = ["x" * 2000, "長" * 500, "[" * 300]

_token = st.one_of(st.sampled_from(MARKUP), st.sampled_from(ESCAPES), st.sampled_from(UNICODE),
                   st.sampled_from(LONG), st.text(max_size=12))


def hostile(*, forbid: str = "") -> st.SearchStrategy[str]:
    """Arbitrary text built from the tokens above, wrapped in ``<`` … ``>`` so a field never
    starts or ends with white space (parsers trim fields; that is not mangling).  ``forbid``:
    characters a wire format cannot carry inside a field (they become spaces)."""
    def build(parts: list[str]) -> str:
        s = "".join(parts)
        for c in forbid:
            s = s.replace(c, " ")
        return f"<{s}>"
    return st.lists(_token, min_size=1, max_size=8).map(build)


# -- one app per test, examples run inside it ---------------------------------------------------------

class AppThread:
    """The app under ``run_test`` in its own thread and event loop; ``call`` runs a coroutine there."""

    def __init__(self, make: Callable[[], CockpitApp]) -> None:
        self.make = make
        self.app: CockpitApp | None = None
        self.pilot: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.failure: BaseException | None = None

    def start(self) -> None:
        ready = threading.Event()
        self.failure = None

        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            self.stop = asyncio.Event()
            self.app = self.make()
            try:
                async with self.app.run_test(size=SIZE) as pilot:
                    self.pilot = pilot
                    ready.set()
                    await self.stop.wait()
            except BaseException as e:  # noqa: BLE001 - the app's crash is the finding: kept and re-raised in the test
                self.failure = e
            finally:
                ready.set()

        self.thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True, name="fuzz-app")
        self.thread.start()
        assert ready.wait(30), "the app did not start within 30 s"

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive() and self.app is not None and self.app.is_running

    def call(self, fn: Callable[[CockpitApp, Any], Awaitable[Any]], timeout: float = 30) -> Any:
        """Run ``fn(app, pilot)`` in the app's loop; a crash of the app fails the example (and the
        next example gets a fresh app, so Hypothesis can shrink)."""
        if not self.alive:
            self.close()
            self.start()
        assert self.loop is not None and self.app is not None
        app = self.app

        async def in_app() -> Any:
            active_app.set(app)  # as in the app's own tasks (rendering looks the app up here)
            return await fn(app, self.pilot)

        fut = asyncio.run_coroutine_threadsafe(in_app(), self.loop)
        try:
            return fut.result(timeout)
        finally:
            exc = self.app._exception
            if exc is not None or not self.app.is_running:
                self.close()
                exc = exc or self.failure
                raise AssertionError(f"the app crashed: {exc!r}") from exc

    def close(self) -> None:
        if self.thread is not None and self.thread.is_alive() and self.loop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
            self.thread.join(30)
        self.thread = None


def _make_app(tmp: Path) -> CockpitApp:
    cfg = local_config(tmp, gpu=True)
    app = create_app(cfg, engine=make_engine(cfg), refresh=False, clock=lambda: FIXED + 4, live=False)
    app.owns_engine = True
    return app


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppThread]:
    """One app for the whole file (each test leaves no modal screen open behind it)."""
    tmp = tmp_path_factory.mktemp("fuzz")
    t = AppThread(lambda: _make_app(tmp))
    t.start()
    yield t
    t.close()


def fuzz(examples: int) -> settings:
    """``examples`` per test: each is a batch of hostile texts through every field of a pane or
    screen (the machine is small and shared: the whole file stays under ~20 s)."""
    return settings(max_examples=quick_or_full(examples), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# -- what reaches the terminal -----------------------------------------------------------------------

#: control characters, bidi controls, line/paragraph separators, lone surrogates
RAW = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def screen_segments(app: CockpitApp) -> Iterator[Segment]:
    """Every segment of a full render of the screen (what Textual would write to the terminal)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    for line in update.strips:  # type: ignore[union-attr]
        for strip in line:
            yield from strip


def assert_terminal_clean(app: CockpitApp) -> None:
    """(c): no raw control/escape/bidi character and no link or click action from the data."""
    for seg in screen_segments(app):
        if seg.control:
            continue
        assert not RAW.search(seg.text), f"raw control character reaches the terminal: {seg.text!r}"
        style = seg.style
        if style is not None:
            assert not style.link, f"a hyperlink from data reaches the terminal: {style.link!r} on {seg.text!r}"
            click = str((style.meta or {}).get("@click", ""))
            assert "quit" not in click and "bell" not in click, f"a click action from data: {click!r} on {seg.text!r}"


def plain(obj: Any) -> str:
    """The text a widget or renderable shows (Rich renders a ``str`` table cell as markup)."""
    if obj is None:
        return ""
    if isinstance(obj, Text):
        return obj.plain
    if isinstance(obj, str):
        return Text.from_markup(obj).plain
    if isinstance(obj, Group):
        return "\n".join(plain(r) for r in obj.renderables)
    if isinstance(obj, Table):
        return "\n".join(plain(c) for col in obj.columns for c in col._cells)
    content = getattr(obj, "plain", None)
    if isinstance(content, str):
        return content
    return str(obj)


def shown(widget: Any) -> str:
    """A Static's (or any widget's) rendered content as text."""
    visual = widget.visual if hasattr(widget, "visual") else widget.render()
    inner = getattr(visual, "_renderable", None)  # a RichVisual wraps a Rich renderable
    return plain(inner if inner is not None else visual)


def subtitle(widget: Any) -> str:
    return widget._border_subtitle.plain if widget._border_subtitle is not None else ""


def title(widget: Any) -> str:
    return widget._border_title.plain if widget._border_title is not None else ""


def norm(s: str) -> str:
    """White space as a terminal cell sees it (tabs expand, runs of spaces are layout)."""
    return " ".join(s.split())


def assert_shown(expected: str, where: str, what: str, *, prefix: int | None = None) -> None:
    """(b): ``expected`` (or its first ``prefix`` characters, for a cut field) appears verbatim."""
    want = norm(expected)
    if prefix is not None:
        want = norm(expected[:prefix])
    assert want in norm(where), f"{what}: {want[:200]!r} not shown verbatim in {norm(where)[:400]!r}"


# -- procs ---------------------------------------------------------------------------------------------

STAT_TAIL = "0 -1 4194560 193 356 0 0 0 0 0 0 20 0 1 0 66927 2990080 410 18446744073709551615 1 1 1 0 0 0 0 6 0 1 0 0 17 0 0 0 0 0 0 1 1 1 1 1 1 1 0"


def wire(text: str) -> str:
    """A field of ``ps`` or ``nvidia-smi`` output as the probes keep it: control characters shown,
    escape sequences shown too (``␛[31m``), never removed (they must not eat the next field)."""
    return sanitize(text, strip_escapes=False)


def ps_output(procs: list[tuple[int, int, str, str, str]]) -> str:
    """The /proc reader's format: (pid, ppid, state, comm, cmdline)."""
    lines = ["@@cockpit-ps proc", "@@uptime 671.91", "@@conf 100", "@@pw 0 root"]
    for pid, ppid, state, comm, cmd in procs:
        lines.append(f"P\t0\t1812\t1\t0\t{cmd}\t{pid} ({comm}) {state} {ppid} {pid} {pid} {STAT_TAIL}")
    return "\n".join(lines) + "\n"


@fuzz(15)
@given(cmds=st.lists(hostile(forbid="\n\t"), min_size=1, max_size=4), comm=hostile(forbid="\n\t()"), err=hostile())
def test_procs_pane_shows_remote_text_verbatim(ui: AppThread, cmds: list[str], comm: str, err: str) -> None:
    rows = [(1, 0, "S", "init", "/sbin/init")] + [(100 + i, 1, "S", "python3", c) for i, c in enumerate(cmds)]
    rows.append((200, 1, "Z", comm, ""))  # a zombie: shown as "[comm] <defunct>", its parent named
    procs, bad = procs_probe.parse_ps(ps_output(rows))
    assert not bad, bad
    findings = [Finding(Layer.CONTAINER, "fuzz", f"summary {c}", advice=f"advice {c}", severity=Severity.ERROR) for c in cmds[:2]]
    view = ProcsView(collected_at=FIXED, procs=procs, findings=findings, job_pids={100}, error=err)

    async def run(app: CockpitApp, pilot: Any) -> None:
        app.post_message(ProcsRefreshed(view))
        await pilot.pause()
        pane = app.query_one(ProcsPane)
        assert pane.view is view
        table = pane.table
        for i, c in enumerate(cmds):
            cell = plain(table.get_row(str(100 + i))[-1])
            assert_shown(wire(c), cell, "a command line")
        assert_shown(f"[{wire(comm)}] <defunct>", plain(table.get_row("200")[-1]), "a zombie's name")
        box = shown(app.query_one("#procs-findings"))
        for f in findings:
            assert_shown(one_line(f.summary), box, "a finding's summary")
            assert_shown(one_line(f.advice), box, "a finding's advice")
        assert_shown(f"refresh failed: {one_line(err)}", subtitle(pane), "the pane's subtitle", prefix=len("refresh failed: ") + 40)
        assert_terminal_clean(app)

    ui.call(run)


# -- GPUs ------------------------------------------------------------------------------------------------

GPU_ROW = "0, {name}, GPU-aaaa, 00000000:18:00.0, 550.90.07, P0, 64, 97, 45, 71234, 81559, 512.34, 700.00, [N/A], Disabled, 0"


@fuzz(8)
@given(name=hostile(forbid="\n,"), pname=hostile(forbid="\n,"), err=hostile())
def test_gpu_pane_shows_names_verbatim(ui: AppThread, name: str, pname: str, err: str) -> None:
    out = ("@@cockpit-gpu query-gpu\n" + GPU_ROW.format(name=f"GPU {name}") + "\n@@cockpit-gpu rc 0\n"
           f"@@cockpit-gpu compute-apps\n4821, /usr/bin/{pname}, 71222, GPU-aaaa\n@@cockpit-gpu rc 0\n")
    snap = gpu_probe.parse_gpu_output(out, "", 0, collected_at=FIXED)
    assert snap.gpus and snap.processes, snap
    view = GPUView(collected_at=FIXED, snapshot=snap, error=err)
    failing = GPUView(collected_at=FIXED, snapshot=None, error=err, error_layer=Layer.GPU)

    async def run(app: CockpitApp, pilot: Any) -> None:
        app.post_message(GpuRefreshed(view))
        await pilot.pause()
        pane = app.query_one(GpuPane)
        card = pane.query_one(GpuCard)
        assert_shown(f"GPU {wire(name)}", shown(card.query_one(".gpu-head")), "a GPU's name")
        base = wire(f"/usr/bin/{pname}").rsplit("/", 1)[-1]  # the pane shows the executable's base name
        assert_shown(base, shown(pane.query_one("#gpu-procs")), "a GPU process's name")
        assert_shown(f"refresh failed: {one_line(err)}", subtitle(pane), "the pane's subtitle", prefix=len("refresh failed: ") + 40)
        assert_terminal_clean(app)
        app.post_message(GpuRefreshed(failing))  # nvidia-smi failed: the error itself is shown
        await pilot.pause()
        assert_shown(one_line(err), shown(pane.query_one("#gpu-error")), "a GPU error", prefix=299)
        assert_terminal_clean(app)

    ui.call(run)


# -- the log ---------------------------------------------------------------------------------------------

_LOG_SEQ = itertools.count(1)


@fuzz(15)
@given(lines=st.lists(hostile(), min_size=1, max_size=6), err=hostile(), path=hostile(forbid="\n"))
def test_log_pane_shows_lines_verbatim(ui: AppThread, lines: list[str], err: str, path: str) -> None:
    text = "\n".join(lines + ["Traceback (most recent call last):", '  File "/w/train.py", line 3, in <module>',
                              f"RuntimeError: {lines[0]}"])
    raw = text.encode("utf-8", "surrogatepass") + b"\n"  # complete lines only (a partial one waits)
    expected = [log_sanitize(ln) for ln in raw.decode("utf-8", "replace").split("\n")[:-1]]

    async def run(app: CockpitApp, pilot: Any) -> None:
        obs = app.driver.observer
        obs.follow(f"/w/{next(_LOG_SEQ)}/{path}.log")  # a new attempt's log: the pane starts over
        upd = obs.log.follower.apply(framed_log(raw), FIXED)  # the real follower: framing, sanitising, classifier
        obs.log.collected_at = FIXED
        obs.log.error = err
        app.post_message(LogBatch(obs.log.path, 1, upd.lines, upd.matches, view=obs.log))
        await pilot.pause()
        pane = app.query_one(LogPane)
        shown_lines = list(pane.log_view.lines)
        assert len(shown_lines) == len(expected), (shown_lines, expected)
        for want, got in zip(expected, shown_lines, strict=True):
            assert norm(want) == norm(got), (want, got)
        assert "RuntimeError" in title(pane) or not upd.matches, title(pane)
        assert_shown(f"refresh failed: {one_line(err)}", subtitle(pane), "the pane's subtitle", prefix=len("refresh failed: ") + 40)
        assert_terminal_clean(app)
        obs.log.error = None
        pane.tick()
        await pilot.pause()
        assert_shown(one_line(obs.log.path), subtitle(pane), "the log's path", prefix=59)
        assert_terminal_clean(app)

    ui.call(run)


# -- the journal: attempts pane, verdict strip, verdict screen ----------------------------------------

def journal_records(note: str, text: str, path: str) -> list[Any]:
    """Two attempts with hostile text in every field, written and read by the journal's own code."""
    stage = Stage(f"verify: alive {text}", Status.FAIL, Layer.APP, f"exited: {text}", advice=f"try {text}",
                  evidence=Evidence(command=f"cat {path}", exit_code=1, output=f"out {text}\nline 2 {text}"))
    verdict = Verdict("attempt", [Stage("ssh reached", Status.OK, Layer.SSH, f"ok {text}"), stage])
    fe = {"layer": "app", "label": text, "summary": f"first {text}", "line": text, "advice": f"fix {text}",
          "traceback": ["Traceback (most recent call last):", f"  {text}", f"RuntimeError: {text}"]}
    evs = [
        {"v": 1, "ts": FIXED, "event": "attempt_started", "attempt": 1, "note": note, "target": text, "log_path": path,
         "code_version": {"git_commit": text, "dirty": True, "dirty_hash": text}},
        {"v": 1, "ts": FIXED + 1, "event": "verdict", "attempt": 1, "action": "attempt", "verdict": verdict},
        {"v": 1, "ts": FIXED + 2, "event": "job", "attempt": 1, "pid": 7, "pgid": 7, "start_time": 1, "unit": text},
        {"v": 1, "ts": FIXED + 3, "event": "attempt_finished", "attempt": 1, "outcome": "failed", "layer": "app",
         "summary": f"attempt: {text}", "first_error": fe, "duration_s": 3.0, "caches": [text]},
        {"v": 1, "ts": FIXED + 4, "event": "fate", "attempt": 1, "state": "died", "layer": "app", "cause": text,
         "at": FIXED + 4, "after_s": 9.0, "last_progress": text},
        {"v": 1, "ts": FIXED + 5, "event": "attempt_started", "attempt": 2, "note": text, "target": "lab"},
        {"v": 1, "ts": FIXED + 6, "event": "attempt_finished", "attempt": 2, "outcome": "untested", "layer": "ssh",
         "summary": note, "first_error": text, "interrupted_reason": text},
    ]
    parsed = [_parse(_dumps(ev)) for ev in evs]
    assert all(p is not None for p in parsed)
    return fold(parsed)  # type: ignore[arg-type]


@fuzz(6)
@given(note=hostile(), text=hostile(), path=hostile(forbid="\n"))
def test_history_verdict_strip_and_screen_show_journal_text_verbatim(ui: AppThread, note: str, text: str, path: str) -> None:
    records = journal_records(note, text, path)

    async def run(app: CockpitApp, pilot: Any) -> None:
        app.post_message(HistoryRefreshed(records, FIXED))
        await pilot.pause()
        pane = app.query_one(HistoryPane)
        row1 = [plain(c) for c in pane.table.get_row("1")]
        row2 = [plain(c) for c in pane.table.get_row("2")]
        assert_shown(one_line(note), row1[5], "a hypothesis", prefix=39)
        assert_shown(one_line(f"first {text}"), row1[7], "a first error", prefix=79)
        assert_shown(one_line(text), row2[5], "a hypothesis", prefix=39)
        assert_shown(one_line(text), row2[7], "a first error", prefix=79)
        strip = app.query_one(VerdictStrip)
        strip.state = "idle"
        strip.show_record(records[0])
        await pilot.pause()
        assert_shown(one_line(f"exited: {text}"), shown(app.query_one("#verdict-detail")), "a stage's detail", prefix=60)
        assert_terminal_clean(app)
        screen = VerdictScreen(records[0], clock=lambda: FIXED + 10)
        await app.push_screen(screen)
        await pilot.pause()
        body = shown(screen.body)
        r = records[0]  # as the journal keeps it (cleaned on write and read); fields on one line, blocks keep lines
        fe, failing = r.first_error, r.failed_stage.stage
        for what, want in (("hypothesis", sanitize(r.note)), ("log path", sanitize(r.log_path)), ("summary", sanitize(r.summary)),
                           ("fate's cause", sanitize(r.fate["cause"])), ("caches", sanitize(r.caches[0])),
                           ("first error", one_line(fe["summary"])), ("advice", sanitize(fe["advice"])),
                           ("traceback", "\n".join(fe["traceback"])), ("stage detail", one_line(failing.detail)),
                           ("stage name", sanitize(failing.name.replace(": ", " › ", 1))),
                           ("evidence (its last 3000 characters)", failing.evidence.output.rstrip()[-3000:])):
            assert_shown(want, body, f"the verdict screen's {what}")
        assert_terminal_clean(app)
        await app.pop_screen()

    ui.call(run)


@fuzz(10)
@given(note=hostile(), detail=hostile(), reason=hostile())
def test_live_stages_verdicts_fates_and_toasts_show_text_verbatim(ui: AppThread, note: str, detail: str, reason: str) -> None:
    stage = Stage("verify: log created", Status.FAIL, Layer.PROCESS, detail, advice=f"→ {detail}",
                  evidence=Evidence("ls", 2, detail))
    verdict = Verdict("attempt", [stage])

    async def run(app: CockpitApp, pilot: Any) -> None:
        app.post_message(ActionStarted("attempt", note))
        app.post_message(StageEvent("attempt", Stage("deploy: checksums", Status.RUNNING, Layer.CONTAINER, detail)))
        await pilot.pause()
        strip = app.query_one(VerdictStrip)
        assert_shown(one_line(note), shown(app.query_one("#verdict-title")), "the attempt's note", prefix=199)
        assert_shown(one_line(detail), shown(app.query_one("#verdict-detail")), "a running stage's detail", prefix=60)
        assert_terminal_clean(app)
        app.post_message(ActionFinished("attempt", verdict, outcome="untested", attempt=3))
        app.post_message(ActionRefused("deploy", reason))
        app.post_message(LoopNotice(reason, "warning", title=reason))
        app.post_message(FateChanged(core_events.FateChanged(1, Fate("died", "app", reason, FIXED, 3.0), "passed")))
        await pilot.pause()
        assert "REFUSED" in strip.plain()
        toasts = [(n.title, n.message, n.markup) for n in app._notifications]
        assert toasts and not any(m for _, _, m in toasts), toasts
        for t, m, _ in toasts:
            assert not RAW.search(m.replace("\n", "").replace("\t", "")) and not RAW.search(t.replace("\t", "")), (t, m)
        assert any(norm(one_line(reason)) in norm(one_line(m)) for _, m, _ in toasts), toasts
        assert_terminal_clean(app)
        app.clear_notifications()

    ui.call(run)


# -- modal screens and the status line -----------------------------------------------------------------

@fuzz(3)
@given(text=hostile(), frame=hostile(forbid="\n"), key=hostile(forbid="\n,\""), files=st.lists(hostile(forbid="\n"), min_size=1, max_size=3))
# found by Hypothesis: an escape sequence begun in one changed file's name and ended in the next's
# swallowed both in the attempt prompt (the names were joined before they were cleaned)
@example(text="<[>", frame="<[>", key="<[>", files=["<[[[[\x1b]2;unterminated[[[>", "<[[[[[[\x07>"])
def test_screens_and_status_line_show_text_verbatim(ui: AppThread, text: str, frame: str, key: str, files: list[str]) -> None:
    threads = parse_py_spy(7, f'Thread 7 (idle): "{key}"\n    {frame} (train.py:1)\n    wait (threading.py:320)\n')
    dump = StackDump("py-spy", FIXED, threads, note=text)

    async def run(app: CockpitApp, pilot: Any) -> None:
        screens: list[tuple[Any, Callable[[], str], list[str]]] = [
            (StacksScreen(dump), lambda: "\n".join(shown(w) for w in app.screen.query("Static")),
             [sanitize(key), sanitize(frame), "wait (threading.py:320)", sanitize(text, newlines=True)]),
            (ConfirmScreen(text, text, f"kill {text}", where=text), lambda: "\n".join(shown(w) for w in app.screen.query("Static")),
             [sanitize(text, newlines=True), sanitize(f"kill {text}", newlines=True)]),
            (HypothesisScreen(text, plan=text, changed=files), lambda: "\n".join(shown(w) for w in app.screen.query("Static")),
             [sanitize(text, newlines=True)] + [sanitize(f) for f in files]),
            (HelpScreen({"attempt": key}), lambda: shown(app.screen.query_one("HelpBody")), [sanitize(key)]),
        ]
        for screen, content, wants in screens:
            await app.push_screen(screen)
            await pilot.pause()
            got = content()
            for w in wants:
                assert_shown(w, got, f"{type(screen).__name__}")
            assert_terminal_clean(app)
            await app.pop_screen()
        app.post_message(SourceChanged({f: "modified" for f in files}, on_save=True))
        app.query_one(StatusLine).set_config_error(text)
        await pilot.pause()
        line = app.query_one(StatusLine).render().plain
        assert_shown(sanitize(files[0]).rsplit("/", 1)[-1], line, "a changed file's name", prefix=20)
        assert_terminal_clean(app)

    ui.call(run)
