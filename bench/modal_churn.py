"""Open and close every modal screen of the TUI, the way a person does, through a Textual pilot.

Shared by ``bench/bench_modals.py`` (RSS over 1,000 cycles) and ``tests/test_ui_memory.py`` (live
objects back to their baseline).  Each modal is opened through the app's own action where there
is one (help ``?``, the hypothesis prompt ``t``, the relaunch confirmation ``R``, the verdict
``v``); the stack dump and a user action's output view are pushed with a sample like the ones
the engine produces.  Each is closed with Escape, as a person closes it (``dismiss``, with its
callback).
"""

from __future__ import annotations

import asyncio
import collections
import gc
import time
from collections.abc import Callable
from typing import Any

__all__ = ["KINDS", "open_modal", "cycle", "churn", "live_counts", "until"]

#: every modal screen of the TUI
KINDS = ("help", "confirm", "prompt", "verdict", "stacks", "output")


async def until(pilot: Any, pred: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Let the app run until ``pred()`` holds; TimeoutError after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")
        await pilot.pause()


def _verdict() -> Any:
    from cockpit.core.layers import Evidence, Layer, Stage, Status, Verdict

    v = Verdict("verify")
    v.add(Stage("job alive", Status.OK, Layer.PROCESS, "pid 4242 running"))
    v.add(Stage("first error", Status.FAIL, Layer.APP, "RuntimeError: Detected that you are using FX [rank0]:",
                evidence=Evidence("tail -n 200 /workspace/logs/train-1.log", 0, "step 1\n" * 40 + "Traceback …"),
                advice="read the traceback"))
    v.finished_at = v.started_at + 1.5
    return v


def _dump() -> Any:
    from cockpit.core.actions.stacks import StackDump, ThreadStack

    frames = [f"train.py:{100 + i} in step_{i}" for i in range(12)]
    threads = [ThreadStack(4242, 4242 + t, f"drafter-{t}", "S", frames[t % 3:]) for t in range(24)]
    return StackDump("py-spy", time.time(), threads)


def _result() -> Any:
    from cockpit.core.layers import Verdict
    from cockpit.core.user_actions import UserActionResult

    out = "\n".join(f"/dev/shm/file-{i:05d}  {i * 4096} bytes" for i in range(2000))
    return UserActionResult("look", "inside container 200", "df -h /dev/shm", Verdict("look"), exit_code=0, output=out,
                            duration_s=0.12)


def open_modal(app: Any, kind: str) -> type[Any]:
    """Open one modal on ``app`` (a :class:`~cockpit.ui.app.CockpitApp`); the screen class to expect."""
    from cockpit.ui.screens import ConfirmScreen, HelpScreen, HypothesisScreen, VerdictScreen
    from cockpit.ui.screens.output import OutputScreen
    from cockpit.ui.screens.stacks import StacksScreen

    if kind == "help":
        app.action_help()
        return HelpScreen
    if kind == "confirm":
        app.action_relaunch()  # the confirmation with the exact commands; Escape answers no
        return ConfirmScreen
    if kind == "prompt":
        app.action_attempt()  # Escape cancels: no attempt runs
        return HypothesisScreen
    if kind == "verdict":
        app.last_verdict = ("verify", _verdict())
        app.action_verdict()
        return VerdictScreen
    if kind == "stacks":
        app.push_screen(StacksScreen(_dump()))
        return StacksScreen
    if kind == "output":
        app.push_screen(OutputScreen(_result(), where="inside container 200"))
        return OutputScreen
    raise ValueError(f"unknown modal {kind!r}: one of {', '.join(KINDS)}")


async def cycle(app: Any, pilot: Any, kind: str) -> None:
    """Open ``kind``, wait until it is composed, close it with Escape, wait until it is gone."""
    screen = open_modal(app, kind)
    await until(pilot, lambda: isinstance(app.screen, screen) and bool(app.screen.query(".modal-box")), f"the {kind} screen")
    await pilot.press("escape")
    await until(pilot, lambda: len(app.screen_stack) == 1, f"the {kind} screen to close")


async def churn(app: Any, pilot: Any, n: int, kinds: tuple[str, ...] = KINDS) -> None:
    """``n`` cycles, round-robin over ``kinds``."""
    for i in range(n):
        await cycle(app, pilot, kinds[i % len(kinds)])
    await asyncio.sleep(0)


def live_counts() -> collections.Counter[str]:
    """After a full collection: live widgets, screens, footer keys and style caches (Textual's)."""
    from textual._styles_cache import StylesCache
    from textual.screen import Screen
    from textual.strip import Strip
    from textual.widget import Widget

    gc.collect()
    c: collections.Counter[str] = collections.Counter()
    for o in gc.get_objects():
        if isinstance(o, Widget):
            c["widgets"] += 1
            if isinstance(o, Screen):
                c["screens"] += 1
            if type(o).__name__ == "FooterKey":
                c["footer keys"] += 1
        elif isinstance(o, StylesCache):
            c["style caches"] += 1
        elif isinstance(o, Strip):
            c["strips"] += 1
    return c
