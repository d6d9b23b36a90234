"""The metrics pane (issue 15), with Pilot: ``5`` shows it in the GPU pane's place, the loss of the
current attempt with the previous one overlaid (each in its own Okabe–Ito colour *and* named by
its attempt number), ``]`` the next metric, ``+`` on an attempt row takes it off or puts it on,
``z`` zooms it, ``3`` brings the GPUs back; with no metric it says which lines it reads.

The metrics are written by the real recorder (a log scan, as the follower feeds it) into the
journal's directory; the app reads them like any later cockpit would."""

from __future__ import annotations

import math
from pathlib import Path

from cockpit.core.actions.jobstate import LogScan
from cockpit.core.journal import Journal
from cockpit.core.layers import Outcome
from cockpit.core.metrics import MetricsStore
from cockpit.ui.panes.gpu import GpuPane
from cockpit.ui.panes.metrics import OKABE_ITO, MetricsPane, MetricsPlot, thin
from tests.test_ui_loop import SIZE, make_app
from tests.test_ui_support import wait_for


def record(journal_dir: Path, attempt: int, steps: int, floor: float) -> None:
    scan = LogScan(None)
    scan.metrics = MetricsStore(journal_dir).recorder(attempt)
    for start in range(1, steps + 1, 20):
        scan.feed("".join(f"[train] step {s} loss {2 * math.exp(-s / 40) + floor:.4f} lr 3e-4\n"
                          for s in range(start, min(steps, start + 19) + 1)).encode())


def two_attempts(tmp_path: Path):
    app = make_app(tmp_path)
    j = Journal(app.cfg.journal_path)
    a = j.start_attempt("baseline", "lab")
    j.finish_attempt(a, Outcome.FAILED)
    b = j.start_attempt("the fix", "lab")
    j.finish_attempt(b, Outcome.PASSED)
    record(app.cfg.journal_path.parent, a, 30, 0.6)
    record(app.cfg.journal_path.parent, b, 200, 0.4)
    return app


def rgb(text, colour: str) -> bool:
    """Some span of ``text`` (Rich Text, or Textual Content) is drawn in ``colour``."""
    want = tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))
    for s in text.spans:
        c = getattr(s.style, "color", None) or getattr(s.style, "foreground", None)
        got = getattr(c, "triplet", None) or getattr(c, "rgb", None)
        if got is not None and tuple(got) == want:
            return True
    return False


async def test_the_pane_plots_the_current_attempt_with_the_previous_one_overlaid(tmp_path):
    app = two_attempts(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(MetricsPane)
        assert not pane.display and app.query_one(GpuPane).display  # the GPUs by default
        await pilot.press("5")
        await wait_for(pilot, lambda: pane.display and pane.shown == [1, 2], what="both attempts plotted")
        assert not app.query_one(GpuPane).display and app.focused is app.query_one(MetricsPlot)
        plot = app.query_one(MetricsPlot)
        frame = plot.render()
        assert "step" in frame.plain and "200" in frame.plain
        assert any(ch in frame.plain for ch in "⠁⠂⠄⡀⢀⠈⠐⠠") and "•" in frame.plain  # the current as a line, #1 as dots
        assert rgb(frame, OKABE_ITO[0]) and rgb(frame, OKABE_ITO[1])
        legend = app.query_one("#metrics-legend").render()
        assert legend.plain.split() == ["━━", "#2", "now", "••", "#1"]  # each series named by its attempt
        assert rgb(legend, OKABE_ITO[0]) and rgb(legend, OKABE_ITO[1])
        assert "loss" in str(pane.border_title) and str(pane.border_subtitle).startswith("#1 #2 · step 200")

        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: "lr" in str(pane.border_title), what="the next metric")

        await pilot.press("z")
        await wait_for(pilot, lambda: app.screen.maximized is pane, what="the zoomed pane")
        await pilot.press("z")

        await pilot.press("4", "down")  # the attempts pane, newest first: row 2 is attempt 1
        assert app.query_one("HistoryPane").selected() == 1
        await pilot.press("plus")
        await wait_for(pilot, lambda: pane.shown == [2], what="attempt 1 taken off the plot")
        await pilot.press("plus")
        await wait_for(pilot, lambda: pane.shown == [1, 2], what="attempt 1 overlaid again")

        await pilot.press("3")
        await wait_for(pilot, lambda: app.query_one(GpuPane).display and not pane.display, what="the GPUs back")


async def test_with_no_metric_the_pane_says_what_it_reads(tmp_path):
    app = make_app(tmp_path)
    app.cfg.metrics.pattern = r"nll=(?P<nll>[0-9.]+)"
    j = Journal(app.cfg.journal_path)
    j.finish_attempt(j.start_attempt("no numbers", "lab"), Outcome.PASSED)
    MetricsStore(app.cfg.journal_path.parent).recorder(1).line(1, "hello")  # a log without metrics
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        empty = app.query_one("#metrics-empty")
        await wait_for(pilot, lambda: empty.display, what="the empty text")
        text = empty.render().plain
        assert "No attempt yet" in text or "No metrics in attempt" in text
        assert "step 120 loss 1.83" in text and "nll=(?P<nll>[0-9.]+)" in text and "[metrics] pattern" in text
        assert not app.query_one(MetricsPlot).display


def test_thinning_keeps_ends_and_extremes():
    xs = [float(i) for i in range(10_000)]
    ys = [math.sin(i / 50) for i in range(10_000)]
    ys[4321] = -9.0
    tx, ty = thin(xs, ys, 50)
    assert len(tx) <= 102 and (tx[0], tx[-1]) == (0.0, 9999.0) and -9.0 in ty and tx == sorted(tx)


async def test_the_demo_shows_its_loss_curve_with_the_failed_and_the_passed_attempt(tmp_path):
    """The built-in demo, for real: the baseline fails (its job is followed until it dies), the
    shipped fix passes; the metrics pane plots the passed attempt's loss with the failed one's."""
    from cockpit.demo import BASELINE_NOTE, FIX_NOTE, apply_fix, demo_config
    from cockpit.ui.app import create_app

    cfg = demo_config()
    cfg.job.healthy_after = 5.0  # judged sooner than the demo's 10 s, as tests/test_demo_compile.py does
    app = create_app(cfg, refresh=False, live=False)
    app.owns_engine = True
    async with app.run_test(size=SIZE) as pilot:
        eng = app.engine
        first = await eng.attempt(BASELINE_NOTE)
        assert first.outcome is Outcome.FAILED
        await wait_for(pilot, lambda: eng.follower is not None and eng.follower.last is not None and eng.follower.last.final,
                       timeout=30, what="the failed job followed to its end")
        apply_fix()
        second = await eng.attempt(FIX_NOTE)
        assert second.outcome is Outcome.PASSED
        m1 = eng.metrics.get(first.attempt)
        await wait_for(pilot, lambda: eng.metrics.get(second.attempt).series["loss"].count > m1.series["loss"].count,
                       timeout=30, what="the passed attempt training past the failed one")
        await pilot.press("5")
        pane = app.query_one(MetricsPane)
        await wait_for(pilot, lambda: pane.shown == [first.attempt, second.attempt], what="both attempts on the plot")
        legend = app.query_one("#metrics-legend").render().plain
        assert f"#{first.attempt}" in legend and f"#{second.attempt} now" in legend
        # the failed attempt's curve ends where its job died; the passed one goes on from the same start
        assert m1.series["loss"].xs[0] == eng.metrics.get(second.attempt).series["loss"].xs[0] == 1.0
        assert "steps/s" in str(pane.border_subtitle)
        await eng.run_action("stop")
