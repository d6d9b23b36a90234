"""The attempt prompt's plan names the steps in the order the attempt runs them (pilot test on the
demo): it said ``deploy → clear … → stop …`` while the attempt stops the old job before it clears
the caches (the old job's environment names its caches, and a running job would write them again)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from cockpit.ui.app import create_app
from cockpit.ui.messages import StageEvent
from cockpit.ui.screens import HypothesisScreen
from tests.test_ui_support import wait_for

WORDS = {"deploy": "deploy ", "stop": "stop", "clear-cache": "clear ", "launch": "launch", "verify": "verify"}


async def test_the_plan_lists_the_steps_in_the_order_they_run(tmp_path: Any, monkeypatch: Any) -> None:
    from cockpit.demo import demo_config

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    stages: list[str] = []

    def hook(msg: Any) -> None:
        if isinstance(msg, StageEvent) and msg.action in WORDS and msg.action not in stages:
            stages.append(msg.action)

    app = create_app(demo_config(), refresh=False)
    async with app.run_test(size=(140, 40), message_hook=hook) as pilot:
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, HypothesisScreen), what="the hypothesis prompt")
        plan = str(app.screen.query_one("#prompt-plan", Static).content)
        planned = sorted(WORDS, key=lambda step: plan.index(WORDS[step]))
        await pilot.press(*"baseline", "enter")
        await wait_for(pilot, lambda: "verify" in stages, timeout=40, what="the attempt to reach verify")
        assert planned == stages, plan
