"""The demo job writes torch.compile's structured trace (``TORCH_TRACE``) in torch's own format, and
cockpit reads it as it reads a real job's: the frames, a recompile and its reason, a graph break,
the compiles on worker threads (the demo's race), the inductor cache cold then warm.

No torch anywhere: minitorch writes the trace.  No fixed sleeps: every wait is a condition polled
under a deadline.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.core.compile import CompileSummary, CompileTracker, filter_text
from cockpit.demo import FIX_DIR, FIX_NOTE, PROJECT_DIR, apply_fix, demo_config
from tests.lab.util import wait_for

DEMO = PROJECT_DIR.parent
SIZE_REASON = "tensor 'batch' size mismatch at index 0. expected 8, actual 16"
ITEM_REASON = "Unsupported Tensor.item() call with capture_scalar_outputs=False"


def line_of(path: Path, pattern: str) -> int:
    """The first line of ``path`` matching ``pattern`` (1-based)."""
    return next(n for n, text in enumerate(path.read_text().splitlines(), 1) if re.search(pattern, text))


def fixed_project(tmp_path: Path) -> Path:
    src = tmp_path / "project"
    shutil.copytree(PROJECT_DIR, src, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(FIX_DIR / "drafter.py", src / "drafter.py")
    return src


def read_trace(directory: Path) -> tuple[CompileSummary, CompileSummary]:
    """The summary of the raw trace files in ``directory``, and of the target-side filter's stream."""
    raw, filtered = CompileTracker(), CompileTracker()
    for f in sorted(directory.glob("dedicated_log_torch_trace_*.log")):
        data = f.read_bytes()
        raw.feed(data, f.name)
        filtered.feed("".join(line + "\n" for line in filter_text(data, f.name)))
    raw.close()
    filtered.close()
    return raw.summary(), filtered.summary()


def complete(s: CompileSummary) -> bool:
    """Every compile of the demo's story is in: the drafters', the model's recompile, the resume frame."""
    forward, call = s.frame("forward"), s.frame("__call__")
    return (forward is not None and forward.compiles == 2 and call is not None and call.compiles == 3
            and any(f.function.startswith("torch_dynamo_resume_in_train_step") for f in s.frames) and s.frame("flex_attention") is not None)


def check_story(s: CompileSummary, src: Path) -> None:
    """What the demo's trace must tell, with the demo's own files and lines."""
    names = {f.function for f in s.frames}
    item_line = line_of(src / "train.py", r"return loss\.item\(\)")
    assert names == {"forward", "train_step", f"torch_dynamo_resume_in_train_step_at_{item_line}", "__call__", "flex_attention"}, names
    forward = s.frame("forward")
    assert forward is not None and forward.file.endswith("model.py") and forward.line == line_of(src / "model.py", r"def forward")
    assert forward.recompiles == 1 and forward.threads == [f"{forward.threads[0].split(':')[0]}:main"]
    assert forward.recompile_reasons == [f"{forward.frame_id}/0: {SIZE_REASON}"]
    step = s.frame("train_step")
    assert step is not None and step.file.endswith("train.py") and step.graph_break_count == 1 and step.restarts == 1
    brk = step.graph_breaks[0]
    assert brk.reason == ITEM_REASON and brk.at.endswith(f"train.py:{item_line}")
    call = s.frame("__call__")
    assert call is not None and call.file.endswith("drafter.py") and call.recompiles == 2
    assert all("len(L['self'].layers) == " in r for r in call.recompile_reasons)
    # the seed's race, as torch >= 2.5 writes it: compiles entered from the drafters' threads
    kinds = {a.kind: a for a in s.alerts}
    assert "threaded_compile" in kinds and "thread_race" not in kinds, [a.message for a in s.alerts]
    race = kinds["threaded_compile"]
    assert race.severity == "warning" and "4 compile(s) ran on worker threads (target compile_drafter)" in race.message
    assert "graph_breaks" in kinds and ITEM_REASON in kinds["graph_breaks"].message
    assert s.torch_version == "2.5.1+demo" and s.recompile_limit == 8 and s.malformed == 0
    assert s.totals["frames"] == 5 and s.totals["recompiles"] == 3 and s.totals["graph_breaks"] == 1


# -- the job itself ---------------------------------------------------------------------------------------


def run_until_complete(src: Path, env: dict[str, str], trace: Path) -> CompileSummary:
    """Run the job until its trace tells the whole story; the trace must be readable *while* it runs."""
    proc = subprocess.Popen([sys.executable, "train.py"], cwd=src, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        seen: list[CompileSummary] = []

        def done() -> bool:
            s, _ = read_trace(trace)
            seen.append(s)
            return complete(s) and s.cache_hits + s.cache_misses == 8

        wait_for(done, 40, lambda: f"the demo job's trace to tell the story; last summary: {seen[-1].to_dict() if seen else None}", interval=0.1)
        assert proc.poll() is None, "the trace was complete only once the job had ended: it must be written as the job compiles"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)
    assert proc.returncode == 0
    raw, filtered = read_trace(trace)
    assert raw.to_dict() == filtered.to_dict(), "what crosses the link must tell what the raw trace tells"
    return raw


def test_the_demo_job_writes_a_torch_trace_as_it_compiles_cold_then_warm(tmp_path: Path) -> None:
    src = fixed_project(tmp_path)
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "COCKPIT_DEMO_GPU_STATE": str(tmp_path / "gpu.json"),
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}

    cold = run_until_complete(src, {**env, "TORCH_TRACE": str(tmp_path / "trace-1")}, tmp_path / "trace-1")
    check_story(cold, src)
    assert (cold.cache_state, cold.cache_misses) == ("cold", 8)
    assert "cache_cold" in {a.kind for a in cold.alerts}
    files = list((tmp_path / "trace-1").iterdir())
    assert len(files) == 1 and re.fullmatch(r"dedicated_log_torch_trace_[a-z0-9_]{8}\.log", files[0].name)
    first = files[0].read_text().splitlines()[0]  # torch's glog prefix: level, date, time (ms), pid, where
    assert re.match(r'^V\d{4} \d\d:\d\d:\d\d\.\d{3}000 \d+ torch/_logging/_internal\.py:\d+\] \{"artifact": \{"name": "torch_version"', first), first

    # the same cache again, not cleared (a relaunch): every graph is a hit
    warm = run_until_complete(src, {**env, "TORCH_TRACE": str(tmp_path / "trace-2")}, tmp_path / "trace-2")
    check_story(warm, src)
    assert (warm.cache_state, warm.cache_hits, warm.cache_misses) == ("warm", 8, 0)


def test_the_demo_never_imports_torch() -> None:
    """The demo runs where torch is not installed: no module of it imports torch."""
    for path in DEMO.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n == "torch" or n.startswith("torch.") for n in names), f"{path} imports torch"


# -- through cockpit: an attempt, the journal, history, the compile view ---------------------------------


def fast_demo_config():
    """The demo's config, judged sooner (the story is complete within ~4 s of the launch)."""
    cfg = demo_config()
    assert cfg.compile.trace, "the demo's config must have the job write its trace"
    cfg.job.healthy_after = 5.0
    return cfg


async def test_a_demo_attempt_journals_the_compile_summary_and_history_shows_it() -> None:
    pytest.importorskip("cockpit.core.probes.signatures")
    from cockpit.core.engine import Engine
    from cockpit.core.layers import Outcome
    from tests.lab.util import await_for

    cfg = fast_demo_config()
    apply_fix()
    engine = Engine(cfg)
    try:
        res = await engine.attempt(FIX_NOTE)
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        assert res.job is not None and res.job.trace_dir.endswith("/.cockpit-trace/attempt-1")
        stage = next(s for s in res.verdict.stages if s.name == "compile cache")
        assert stage.detail.startswith("cold ✔") and stage.data["cleared"] and stage.data["misses"] > 0 and stage.data["hits"] == 0

        def journalled() -> CompileSummary | None:
            rec = engine.journal.get(res.attempt)
            s = CompileSummary.from_dict(rec.compile) if rec is not None and rec.compile else None
            return s if s is not None and complete(s) else None

        summary = await await_for(journalled, 30, "the whole story in the journal's compile event")
        workspace = Path(cfg.job.workdir)
        check_story(summary, workspace)
        assert summary.cache_state == "cold"
    finally:
        await engine.run_action("stop")
        await engine.close()

    out = subprocess.run([sys.executable, "-m", "cockpit", "--demo", "history", "--json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    (row,) = [r for r in json.loads(out.stdout) if r["attempt"] == res.attempt]
    told = CompileSummary.from_dict(row["compile"])
    assert {f.function for f in told.frames} == {f.function for f in summary.frames}
    forward = told.frame("forward")
    assert forward is not None and forward.recompiles == 1 and forward.recompile_reasons[-1].endswith(SIZE_REASON)
    assert "threaded_compile" in {a.kind for a in told.alerts}


async def test_T_in_the_demo_app_shows_the_compiled_frames() -> None:
    from textual.widgets import DataTable, Static

    from cockpit.ui.app import create_app
    from cockpit.ui.screens import HypothesisScreen
    from cockpit.ui.screens.compile import CompileScreen
    from tests.test_ui_support import wait_for as ui_wait_for

    apply_fix()
    app = create_app(fast_demo_config(), refresh=False)
    async with app.run_test(size=(140, 45)) as pilot:
        eng = app.engine
        try:
            await pilot.press("t")
            await ui_wait_for(pilot, lambda: isinstance(app.screen, HypothesisScreen), what="the hypothesis prompt")
            await pilot.press(*"with the fix")
            await pilot.press("enter")

            def live() -> bool:
                n = eng.job_attempt
                s = eng.compile.summary(n) if n is not None else None
                return s is not None and s.frame("forward") is not None

            await ui_wait_for(pilot, live, timeout=30, what="the running job's compiles")
            await pilot.press("T")
            await ui_wait_for(pilot, lambda: isinstance(app.screen, CompileScreen), what="the compile screen")
            screen = app.screen
            assert isinstance(screen, CompileScreen)
            table = screen.query_one("#compile-frames", DataTable)

            def rows() -> dict[str, list[str]]:
                return {str(table.get_row_at(i)[1]): [str(c) for c in table.get_row_at(i)] for i in range(table.row_count)}

            # updated live while the job compiles: the recompile of forward and the drafters' compiles arrive
            await ui_wait_for(pilot, lambda: rows().get("forward", [""] * 5)[4] == "1" and "flex_attention" in rows(),
                              timeout=30, what="the frames in the compile view")
            shown = rows()
            assert {"forward", "train_step", "__call__", "flex_attention"} <= set(shown)
            forward = screen.summary.frame("forward")
            assert forward is not None and forward.where.endswith(f"model.py:{line_of(PROJECT_DIR / 'model.py', r'def forward')}")
            assert shown["train_step"][5] == "1"  # its graph break
            assert "compile(s) ran on worker threads" in str(screen.query_one("#compile-alerts", Static).content)
            await pilot.press("escape")

            def verdict() -> bool:
                recs = eng.journal.attempts()
                return bool(recs) and not recs[-1].open

            await ui_wait_for(pilot, verdict, timeout=40, what="the attempt's verdict")
        finally:
            await eng.run_action("stop", wait=True)  # after the attempt, when a failed check left it running
