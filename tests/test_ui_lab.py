"""The TUI against the lab (a real sshd, emulated Proxmox): one attempt, start to verdict."""

from __future__ import annotations

import pytest

from cockpit.core.layers import Layer
from cockpit.ui.app import create_app
from cockpit.ui.messages import ActionFinished, StageEvent
from cockpit.ui.panes import GpuPane, HistoryPane, StatusLine, VerdictStrip
from cockpit.ui.screens import HypothesisScreen
from tests.test_ui_app import SIZE, Recorder
from tests.test_ui_support import wait_for

pytestmark = pytest.mark.lab


async def test_one_attempt_over_ssh_into_the_emulated_container(lab, lab_config):
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", "0", "--interval", "0.05", "--threads", "3",
                                                        "--crash", "fx", "--crash-at", "1")})
    lab.set_gpu_state("normal", gpus=[lab.gpu(0, **{"utilization.gpu": 88})])
    rec = Recorder()
    app = create_app(cfg, refresh=True)
    async with app.run_test(size=SIZE, message_hook=rec) as pilot:
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, HypothesisScreen), what="the hypothesis prompt")
        await pilot.press(*"serialise first compile")
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(rec.of(ActionFinished)), timeout=60, what="the verdict")
        done = rec.of(ActionFinished)[0]
        assert done.outcome == "failed" and done.verdict.layer is Layer.APP, done.verdict.summary()
        # the connectivity stages came live over SSH, before the verdict
        connect = [m for m in rec.of(StageEvent) if m.action == "connect"]
        assert connect and connect[0].stage.name == "ssh reached"
        assert app.query_one(VerdictStrip).banner_text() == "✘ FAILED — the code ran and failed (app)"
        history = app.query_one(HistoryPane)
        await wait_for(pilot, lambda: history.table.row_count == 1, what="the history row")
        gpu = app.query_one(GpuPane)
        await wait_for(pilot, lambda: bool(gpu.cards), timeout=15, what="the GPU pane")
        assert "H100" in next(iter(gpu.cards.values())).head_text().plain  # read over SSH from the emulator
        status = app.query_one(StatusLine)
        link = status.link()
        assert link["ssh"][0] == "ok" and link["container"][0] == "ok", link
        await app.engine.run_action("stop")


async def test_a_slow_start_shows_its_wait_against_startup_timeout_as_a_bar(lab, lab_config):
    """A model still loading: verify is pending, and the strip shows how much of startup_timeout
    has gone (a bar and "Ns of 40s"), moving on while it waits; then the verdict."""
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", "0", "--interval", "0.1", "--start-delay", "4"),
                          "startup_timeout": 40})
    app = create_app(cfg, refresh=False)
    async with app.run_test(size=SIZE) as pilot:
        strip = app.query_one(VerdictStrip)
        app.actions.run_engine("relaunch")
        seen: list[str] = []

        def bar() -> bool:
            text = strip.detail_text().plain
            if "▕" in text and "s of 40s" in text:
                seen.append(text)
            return len({t.split("▏ ")[1].split("s of")[0] for t in seen}) >= 2  # the elapsed time moved on

        await wait_for(pilot, bar, timeout=30, what=lambda: f"a moving startup bar: {strip.state} {strip.plain()!r} {[(r.name, r.status, r.data) for r in strip.rows][-3:]}")
        assert "› progress" in seen[-1] and "waiting for /^step" in seen[-1], seen[-1]  # what it waits for, and how long it may
        await wait_for(pilot, lambda: strip.state != "running", timeout=60, what="the verdict")
        assert "▕" not in strip.detail_text().plain  # decided: no bar
        await app.engine.run_action("stop")


def test_the_progress_bar_reads_waits_and_counts():
    from cockpit.ui.panes.verdict import progress_bar

    assert progress_bar({"wait": {"since": 100.0, "deadline_s": 60}}, 115.0, width=8) == "▕██░░░░░░▏ 15s of 60s"
    assert progress_bar({"progress": {"done": 3, "total": 4, "unit": "files"}}, 0, width=4) == "▕███░▏ 3 of 4 files"
    assert progress_bar({"wait": {"since": 0.0, "deadline_s": 10}}, 99.0, width=4) == "▕████▏ 99s of 10s"  # past: full, honest figure
    assert progress_bar({}, 0) is None
