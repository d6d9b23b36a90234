"""The startup clock of ``[verify] startup_timeout_from`` (cockpit/core/actions/startclock.py) on a
real trace directory read by the real filter through a local transport: no follower (a cockpit
that started late, no channel to spare), so the trace is read whole.  The lab tests
(test_startup_from_compile_lab.py) run it through whole attempts."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cockpit.core.actions import startclock
from cockpit.core.actions.jobrecord import JobRecord
from cockpit.core.actions.startclock import StartupClock
from cockpit.core.config import Config, parse_config
from cockpit.core.remote.local import LocalTransport
from cockpit.core.runtimes import HostRuntime

FIXTURE = next((Path(__file__).parent / "fixtures" / "torch_trace" / "recompile_storm").glob("dedicated_log_torch_trace_*.log"))


def cfg(mode: str, startup: float = 3, compile_timeout: float = 60) -> Config:
    return parse_config(f'[target]\nhost = "x"\n[job]\nstartup_timeout = {startup}\n'
                        f'[verify]\nstartup_timeout_from = "{mode}"\ncompile_timeout = {compile_timeout}\n')


@pytest.fixture
async def transport() -> AsyncIterator[LocalTransport]:
    tr = LocalTransport(HostRuntime())
    yield tr
    await tr.close()


def write_until_first_start(trace: Path) -> list[str]:
    """The fixture's lines up to its first ``dynamo_start`` written into ``trace``; the rest returned."""
    lines = FIXTURE.read_text().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if '{"dynamo_start"' in ln)
    trace.mkdir(exist_ok=True)
    (trace / FIXTURE.name).write_text("".join(lines[: first + 1]))
    return lines[first + 1:]


async def test_launch_mode_reads_nothing(transport: LocalTransport, tmp_path: Path) -> None:
    started = time.time() - 10
    clock = StartupClock(cfg("launch"), transport, JobRecord(trace_dir=str(tmp_path)), started)
    dl = await clock.at(time.time())
    assert (dl.phase, dl.at, dl.since, dl.span_s, dl.note) == ("launch", started + 3, started, 3, "")
    assert clock.read_at is None


async def test_a_compile_seen_in_a_whole_read_is_pending_until_compile_timeout_then_its_end_starts_the_clock(
        transport: LocalTransport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "trace"
    rest = write_until_first_start(trace)
    started = time.time() - 10  # past startup_timeout (3 s) from launch
    clock = StartupClock(cfg("first_compile"), transport, JobRecord(trace_dir=str(trace)), started)
    dl = await clock.at(time.time())
    assert clock.whole is not None, clock.unread
    assert dl.phase == "compiling" and dl.at == started + 60 and (dl.since, dl.span_s) == (started, 60)
    assert [(c.function, c.where.rsplit("/", 1)[-1]) for c in dl.busy] == [("grow", "recompile_storm.py:14")]
    assert dl.waiting("waiting for /step/").startswith("compiling `grow` (recompile_storm.py:14) for 0 s; then waiting for /step/")
    # the compile ends: the next whole read dates it, and startup_timeout counts from there
    with (trace / FIXTURE.name).open("a") as f:
        f.writelines(rest)
    monkeypatch.setattr(startclock, "WHOLE_EVERY_S", 0.0)
    now = time.time()
    dl = await clock.at(now)
    assert dl.phase == "compiled" and clock.first_end is not None
    assert started < clock.first_end <= now and dl.at == clock.first_end + 3 and dl.span_s == 3
    assert dl.note.startswith("the first compile ended ") and dl.note.endswith("after launch: startup_timeout counts from there")


async def test_no_compile_by_the_deadline_from_launch_is_judged_from_launch(transport: LocalTransport, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    trace.mkdir()
    started = time.time() - 10
    clock = StartupClock(cfg("first_compile"), transport, JobRecord(trace_dir=str(trace)), started)
    dl = await clock.at(time.time())
    assert clock.whole is not None
    assert (dl.phase, dl.at) == ("not compiled", started + 3)
    assert dl.note == "no compile started yet: startup_timeout counts from launch"


async def test_without_a_trace_the_clock_counts_from_launch_and_says_why(transport: LocalTransport) -> None:
    started = time.time() - 10
    clock = StartupClock(cfg("first_compile"), transport, JobRecord(trace_dir=""), started)
    dl = await clock.at(time.time())
    assert (dl.phase, dl.at) == ("fallback", started + 3)
    assert dl.note == "startup_timeout counts from launch: the job writes no torch.compile trace ([compile] trace is off)"


async def test_compile_timeout_is_never_shorter_than_startup_timeout(transport: LocalTransport, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    write_until_first_start(trace)
    started = time.time() - 10
    clock = StartupClock(cfg("first_compile", startup=5, compile_timeout=2), transport, JobRecord(trace_dir=str(trace)), started)
    dl = await clock.at(time.time())
    assert dl.phase == "compiling" and dl.at == started + 5


async def test_a_follower_up_but_not_through_the_trace_so_far_is_not_taken_for_no_compile(
        transport: LocalTransport, tmp_path: Path) -> None:
    """A later ``cockpit verify``: its trace filter has started (its header came) but has not yet
    sent what the job wrote before; its empty view is no proof that nothing compiles."""
    from cockpit.core.compile import CAUGHT_UP
    from cockpit.core.compile_follow import TraceFollower

    trace = tmp_path / "trace"
    write_until_first_start(trace)
    fol = TraceFollower(transport, str(trace))  # registered for the clock to find; its stream is not run here
    fol.state, fol.header = "following", ["@cockpit-trace 1"]
    fol.on_up()
    started = time.time() - 10
    clock = StartupClock(cfg("first_compile"), transport, JobRecord(trace_dir=str(trace)), started)
    assert clock.live() == (None, "its torch.compile trace's filter is starting")
    dl = await clock.at(time.time())
    assert dl.phase == "compiling" and dl.at == started + 60, (dl.phase, dl.note)  # read whole meanwhile
    assert fol.on_line(CAUGHT_UP) is False and fol.caught_up
    assert clock.live() == (fol.live, "")
    assert fol.live.summary().malformed == 0  # the marker is not a trace line
