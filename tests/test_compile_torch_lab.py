"""Real torch jobs (tests/lab/torch_jobs/) through real cockpit attempts in the lab (real sshd, the
pct emulator's container), each job run by the Python that ``COCKPIT_TORCH_PYTHON`` names.

A graph break and a recompile storm shown in the TUI's compile screen (``T``, a real CockpitApp on
the engine that ran the attempt) and two threads compiling at once named by their alert; the
compile cache (cold, warm on a relaunch, cold after clear-cache, in history) is
tests/test_compile_torch_cache_lab.py, which shares this file's helpers.  What crossed the link for
the trace and the filter's CPU are measured while the jobs compile (printed as ``torch trace
measure:``, and written to ``$COCKPIT_COMPILE_MEASURE_TORCH`` when set, one JSON line per job).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.widgets import DataTable, Static

from cockpit.core.compile import CompileSummary
from cockpit.core.compile_follow import TraceFollower
from cockpit.core.events import CompileUpdated, Event
from cockpit.core.layers import Outcome
from cockpit.ui.app import create_app
from cockpit.ui.messages import ActionFinished
from cockpit.ui.screens.compile import CompileScreen
from tests.lab import await_for
from tests.test_compile_wiring_lab import FilterCPU
from tests.test_ui_app import Recorder
from tests.test_ui_support import wait_for

TORCH_JOBS = Path(__file__).parent / "lab" / "torch_jobs"
TORCH_PYTHON = os.environ.get("COCKPIT_TORCH_PYTHON", "")

pytestmark = [
    pytest.mark.lab,
    pytest.mark.torch,
    # a hang guard, no timing: up to three real compiles a test take minutes on a loaded 2-core machine
    pytest.mark.timeout(300),
    pytest.mark.skipif(not TORCH_PYTHON, reason="set COCKPIT_TORCH_PYTHON to a Python that has torch"),
    # every lab container mounts its own tmpfs on /tmp: a venv under the host's /tmp is not there
    pytest.mark.skipif(os.path.realpath(TORCH_PYTHON or "/").startswith("/tmp/") or TORCH_PYTHON.startswith("/tmp/"),
                       reason="COCKPIT_TORCH_PYTHON is under /tmp, which the lab's containers do not see"),
]

#: a torch import and a compile on two shared cores: seconds each, more under load
STARTUP = 240
FINAL = 120


def torch_job(lab: Any, name: str, **extra: Any) -> dict[str, Any]:
    """``[job]`` for torch job ``name`` copied into the container's workspace."""
    ws = Path(lab.workspace())
    shutil.copy(TORCH_JOBS / f"{name}.py", ws / f"{name}.py")
    return {"command": f"{TORCH_PYTHON} {ws}/{name}.py", "startup_timeout": STARTUP, "progress_pattern": f"{name} done", **extra}


class QuietFilterCPU(FilterCPU):
    """FilterCPU that, once it has found the filter, reads only the filter's stat each sample and
    every command line on /proc once a second (a filter started since): the full scan every 0.1 s
    took the test's own event loop, beside the engine under test, a tenth of a core and more on a
    machine busy with other tests' labs.  A pid read again is the same process (its start time)."""

    def __init__(self, trace_dir_prefix: str) -> None:
        super().__init__(trace_dir_prefix)
        self.samples = 0
        self.started: dict[int, str] = {}

    def sample(self) -> None:
        self.samples += 1
        if not self.ticks or self.samples % 10 == 0:
            super().sample()
        for pid in list(self.ticks):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if self.started.setdefault(pid, fields[19]) != fields[19]:
                continue  # the filter's pid, now another process's
            self.ticks[pid] = int(fields[11]) + int(fields[12])
            self.last[pid] = time.monotonic()


class Watch:
    """The engine's CompileUpdated events, the attempt's follower (caught while it lives: a short job
    can end, and its follower go, before the attempt returns) and the filter's CPU on the target."""

    def __init__(self, eng: Any, lab: Any) -> None:
        self.eng = eng
        self.updates: list[CompileUpdated] = []
        self.followers: dict[int, TraceFollower] = {}
        self.cpu: FilterCPU = QuietFilterCPU(f"{lab.workspace()}/.cockpit-trace/")
        self.t0 = time.monotonic()
        self._sampler: asyncio.Task[None] | None = None
        eng.subscribe(self.on)

    def on(self, ev: Event) -> None:
        if isinstance(ev, CompileUpdated):
            self.updates.append(ev)
            fol = self.eng.compile.followers.get(ev.attempt)
            if fol is not None:
                self.followers.setdefault(ev.attempt, fol)

    def start(self) -> None:
        """Measure from now (the next attempt's follower, its filter's CPU)."""
        self.t0 = time.monotonic()
        self.followers.clear()
        self.cpu = QuietFilterCPU(self.cpu.prefix)
        self._sampler = asyncio.get_running_loop().create_task(self.cpu.run())

    async def final(self, n: int, pause: Any = None) -> CompileSummary:
        """Attempt ``n``'s final summary (the whole read after its job ended)."""
        kw = {"pause": pause} if pause is not None else {}
        await await_for(lambda: any(u.final and u.attempt == n for u in self.updates), FINAL, f"attempt {n}'s final compile summary", **kw)
        if self._sampler is not None:
            self._sampler.cancel()
            self._sampler = None
        return next(u for u in self.updates if u.final and u.attempt == n).summary

    def measure(self, n: int, trace_dir: str, job: str) -> dict[str, Any]:
        """What crossed the link for attempt ``n``'s trace against the trace's size, and the filter's CPU."""
        fol = self.followers[n]
        wall = time.monotonic() - self.t0
        streamed = fol.bytes_in - fol.bytes_whole
        seen = self.cpu.seen_s
        m = {"job": job, "torch": TORCH_PYTHON, "trace_bytes": sum(f.stat().st_size for f in Path(trace_dir).iterdir()),
             "link_bytes": fol.bytes_in, "streamed_bytes": streamed, "final_read_bytes": fol.bytes_whole,
             "live_updates": sum(1 for u in self.updates if u.attempt == n and not u.final),
             "wall_s": round(wall, 2), "link_bytes_per_s": round(fol.bytes_in / wall, 1),
             "filter_cpu_s": round(self.cpu.cpu_s, 3), "filter_seen_s": round(seen, 2),
             "filter_cpu_pct": round(100 * self.cpu.cpu_s / seen, 2) if seen else None,
             "streamed_bytes_per_filter_s": round(streamed / seen, 1) if seen else None}
        m["ratio"] = round(m["trace_bytes"] / max(1, fol.bytes_whole), 1)
        print("torch trace measure:", json.dumps(m))
        if os.environ.get("COCKPIT_COMPILE_MEASURE_TORCH"):
            with open(os.environ["COCKPIT_COMPILE_MEASURE_TORCH"], "a") as out:
                out.write(json.dumps(m) + "\n")
        assert self.cpu.ticks, "the filter ran in the container"
        assert fol.bytes_whole < m["trace_bytes"] / 3  # the filter sends a fraction of the trace
        return m


def cockpit(cfg: Any, *args: str) -> Any:
    out = subprocess.run(["cockpit", "--config", str(cfg.path), *args], capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    return json.loads(out.stdout)


def plain(screen: CompileScreen, wid: str) -> str:
    r = screen.query_one(wid, Static).render()
    return r.plain if isinstance(r, Text) else str(r)


async def attempt_in_app(app: Any, pilot: Any, rec: Recorder, note: str) -> Any:
    """An attempt as the user starts one (``t``, the hypothesis, enter); its ActionFinished."""
    await pilot.press("t")
    await wait_for(pilot, lambda: app.screen is not app.screen_stack[0], what="the hypothesis prompt")
    await pilot.press(*note)
    await pilot.press("enter")
    await wait_for(pilot, lambda: bool(rec.of(ActionFinished)), timeout=STARTUP + 60, what="the attempt's verdict")
    return rec.of(ActionFinished)[-1]


@contextlib.asynccontextmanager
async def attempted_in_app(cfg: Any, eng: Any, lab: Any, note: str) -> AsyncIterator[tuple[Any, Any, Watch, int, Any]]:
    """A real CockpitApp on ``eng``; an attempt started as the user starts one, passed; yields the
    app, its pilot, the trace watch, the attempt and its final compile summary."""
    watch = Watch(eng, lab)
    rec = Recorder()
    app = create_app(cfg, engine=eng, refresh=False)
    async with app.run_test(size=(160, 50), message_hook=rec) as pilot:
        watch.start()
        done = await attempt_in_app(app, pilot, rec, note)
        assert done.outcome == "passed", done.verdict.summary() if done.verdict else done.error
        assert done.attempt is not None
        yield app, pilot, watch, done.attempt, await watch.final(done.attempt, pause=pilot.pause)


async def open_compile_screen(app: Any, pilot: Any) -> CompileScreen:
    await pilot.press("T")
    await wait_for(pilot, lambda: isinstance(app.screen, CompileScreen), what="the compile screen")
    screen = app.screen
    assert isinstance(screen, CompileScreen)
    await wait_for(pilot, lambda: rows(screen) != [], what="the frames on screen")
    return screen


def rows(screen: CompileScreen) -> list[list[str]]:
    table = screen.query_one("#compile-frames", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_a_graph_break_is_named_in_the_summary_and_shown_in_the_compile_screen(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job=torch_job(lab, "graph_break"))
    eng = engines(cfg)
    async with attempted_in_app(cfg, eng, lab, "graph break") as (app, pilot, watch, n, s):

        # the summary: the frame, where the graph broke and why; the resumed frame; the fullgraph failure
        branchy = s.frame("branchy")
        assert branchy is not None and branchy.where.endswith("graph_break.py:10") and branchy.graph_break_count == 1
        brk = branchy.graph_breaks[0]
        assert brk.at.endswith("graph_break.py:13") and "Tensor.item()" in brk.reason, brk
        assert s.frame("torch_dynamo_resume_in_branchy_at_13") is not None
        strict = s.frame("strict")
        assert strict is not None and [f.fail_type for f in strict.failures] == ["UserError"]
        assert {a.kind for a in s.alerts} == {"graph_breaks", "compile_failure"}
        assert s.totals["graph_breaks"] == 1 and s.torch_version

        # the compile screen (T) on the attempt: frames, breaks, the break's place and reason, alerts
        screen = await open_compile_screen(app, pilot)
        assert screen.attempt == n
        table = rows(screen)
        by_fn = {r[1]: r for r in table}
        assert list(by_fn) == ["branchy", "torch_dynamo_resume_in_branchy_at_13", "strict"], table
        assert by_fn["branchy"][5] == "1" and by_fn["strict"][9] == "failed"  # breaks; state
        assert plain(screen, "#compile-totals").startswith("compiled 3 frames, 1 graph break, 1 failed compile")
        detail = plain(screen, "#compile-detail")  # the first frame, selected
        assert detail.startswith("branchy") and "graph breaks:" in detail and "graph_break.py:13: " in detail and "Tensor.item()" in detail, detail
        alerts = plain(screen, "#compile-alerts")
        assert "graph break" in alerts and "→ " in alerts and "UserError" in alerts, alerts
        await pilot.press("escape")

    watch.measure(n, f"{lab.workspace()}/.cockpit-trace/attempt-{n}", "graph_break")


async def test_a_recompile_storm_hits_the_limit_alert_with_advice_and_shows_its_reasons(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job=torch_job(lab, "recompile_storm"))
    eng = engines(cfg)
    async with attempted_in_app(cfg, eng, lab, "storm") as (app, pilot, watch, n, s):
        grow = s.frame("grow")
        assert grow is not None and grow.compiles == 4 and grow.limit_hit and s.recompile_limit == 4 and s.torch_version
        assert len(grow.recompile_reasons) >= 3 and all("size mismatch at index 0" in r for r in grow.recompile_reasons), grow.recompile_reasons
        assert [a.kind for a in s.alerts] == ["recompile_limit"] and "mark_dynamic" in s.alerts[0].advice

        screen = await open_compile_screen(app, pilot)
        (row,) = rows(screen)
        assert (row[1], row[3], row[4], row[9]) == ("grow", "4", "3", "limit hit"), row
        detail = plain(screen, "#compile-detail")
        assert "recompile reasons:" in detail and "tensor 'x' size mismatch at index 0" in detail, detail
        alerts = plain(screen, "#compile-alerts")
        assert alerts.startswith("error: ") and "recompile limit (4)" in alerts and "mark_dynamic" in alerts, alerts
        await pilot.press("escape")

    watch.measure(n, f"{lab.workspace()}/.cockpit-trace/attempt-{n}", "recompile_storm")
    # cockpit status: the alert as a finding with its advice
    found = [f for f in cockpit(cfg, "status", "--json", "--quick")["findings"] if f["kind"].startswith("compile-")]
    assert [f["kind"] for f in found] == ["compile-recompile-limit"] and "mark_dynamic" in found[0]["advice"], found


async def test_two_threads_compiling_at_once_raise_the_threaded_compile_alert(lab: Any, lab_config: Any, engines: Any) -> None:
    cfg = lab_config(job=torch_job(lab, "thread_race"))
    eng = engines(cfg)
    watch = Watch(eng, lab)
    watch.start()
    res = await eng.attempt("two drafters compiling")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    s = await watch.final(res.attempt)
    step = s.frame("step")
    assert step is not None and step.compiles == 2 and step.threads, step  # the second thread's compile is a recompile
    alert = next((a for a in s.alerts if a.kind in ("threaded_compile", "thread_race")), None)
    assert alert is not None, s.alerts
    assert "worker thread" in alert.message or "overlap" in alert.message, alert.message
    assert "compile on one thread" in alert.advice.lower() and "main thread" in alert.advice, alert.advice
    assert res.job is not None and res.job.trace_dir
    watch.measure(res.attempt, res.job.trace_dir, "thread_race")
    found = [f for f in cockpit(cfg, "status", "--json", "--quick")["findings"] if f["kind"].startswith("compile-")]
    assert [f["kind"] for f in found] == [f"compile-{alert.kind.replace('_', '-')}"] and "main thread" in found[0]["advice"], found
