"""A quiet log is waited on, not polled: one `tail -F` in the container (cockpit/core/probes/log_waker.py)
against the lab: a write wakes it (a partial line too), a quiet stretch leaves the view fresh with no
probe run, a new attempt's log ends a wait on the old one, its processes are cockpit's own and end
with it, and a tail without -F is polled instead."""

from __future__ import annotations

import asyncio
import time

import pytest

from cockpit.core.engine import Engine
from cockpit.core.probes.log_waker import LogWaker
from tests.lab.util import await_for, pids_where

pytestmark = pytest.mark.lab


def _tails(lab, path: str) -> list[int]:
    return pids_where(lambda argv: argv[:1] == [b"tail"] and path.encode() in argv)


async def _engine(lab, lab_config, name: str):
    log = lab.workspace() / name
    log.write_text("step 1 | loss 2.0\n")
    eng = Engine(lab_config())
    obs = eng.observer
    obs.follow(str(log))
    await obs.refresh_log()
    assert obs.log.follower.offset == log.stat().st_size
    return eng, obs, log


async def test_a_write_wakes_the_wait_and_a_quiet_stretch_runs_no_probe(lab, lab_config):
    eng, obs, log = await _engine(lab, lab_config, "waker-a.log")
    runs = []
    real = eng.transport.run

    async def counted(*a, **kw):
        runs.append(a)
        return await real(*a, **kw)

    eng.transport.run = counted  # type: ignore[method-assign]
    try:
        t0 = time.time()
        assert await obs.wait_log(1.0) == "quiet"
        assert not runs and obs.log.collected_at >= t0  # watched, not polled: fresh as of now
        waiting = asyncio.ensure_future(obs.wait_log(20))
        await await_for(lambda: obs.streams.log is not None and obs.streams.log.shell_pid is not None, 10, "the waker armed")
        eng.transport.run = real  # type: ignore[method-assign]
        view = await obs.refresh_procs()
        waker_shell = obs.streams.log.shell_pid
        tails = {p.pid for p in view.procs if p.args.startswith("tail ")}
        assert waker_shell in view.own_pids and tails and tails <= view.own_pids, (waker_shell, tails, view.own_pids)
        t_write = time.monotonic()
        with log.open("a") as fh:
            fh.write("step 2 | loss 1.9")  # a partial line (no newline yet) is a change too
        assert await asyncio.wait_for(waiting, 10) == "changed"
        woke_ms = (time.monotonic() - t_write) * 1000
        print(f"\nlog waker: woke {woke_ms:.0f} ms after the write")
        assert woke_ms < 5000
        await await_for(lambda: not _tails(lab, str(log)), 10, "tail ended with the wait")
    finally:
        eng.transport.run = real  # type: ignore[method-assign]
        await eng.close()


async def test_bytes_written_before_the_wait_wake_it_at_once(lab, lab_config):
    eng, obs, log = await _engine(lab, lab_config, "waker-b.log")
    try:
        with log.open("a") as fh:
            fh.write("step 2 | loss 1.9\n")  # after the poll, before the wait: tail starts at the poll's offset
        assert await asyncio.wait_for(obs.wait_log(20), 10) == "changed"
    finally:
        await eng.close()


async def test_a_new_attempts_log_ends_a_wait_on_the_old_one(lab, lab_config):
    eng, obs, log = await _engine(lab, lab_config, "waker-c.log")
    try:
        waiting = asyncio.ensure_future(obs.wait_log(30))
        await await_for(lambda: obs.streams.log is not None and obs.streams.log.shell_pid is not None, 10, "the waker armed")
        obs.follow(str(lab.workspace() / "waker-c2.log"))
        assert await asyncio.wait_for(waiting, 5) == "changed"
    finally:
        await eng.close()


async def test_a_tail_without_follow_is_polled() -> None:
    async def refusing(cmd: str):
        yield b"@@cockpit-log wait 42\n"
        yield b"@@cockpit-log exit 1\n"

    w = LogWaker(refusing)
    assert await w.wait("/w/train.log", 0, 5) == "error"
    assert w.state == "unsupported" and not w.usable and "status 1" in (w.last_error or "")
