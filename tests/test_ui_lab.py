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
