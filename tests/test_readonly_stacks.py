"""Read-only modes never write: ``w`` (stacks) in ``--read-only``, ``--share`` (and so the browser
view, which runs ``cockpit --share``) shows the dump the journal kept and runs nothing in the target.

A real engine on the local transport and a real job process; the transport's entry points are
counted (the real ones still run) and the journal compared byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.job import JobRecord
from cockpit.core.actions.stacks import StackDump, ThreadStack
from cockpit.core.engine import STACKS_EVENT
from cockpit.core.fate import FATE_EVENT, stopped_fate
from cockpit.core.journal import Journal
from cockpit.ui.app import CockpitApp, create_app
from cockpit.ui.screens.stacks import StacksScreen
from tests.test_ui_support import local_config, make_engine, wait_for

SIZE = (80, 24)
ENTRY_POINTS = ("run", "run_many", "run_host", "run_channel", "stream", "stream_host", "put_bytes")


def seed_journal(cfg: Any, job: JobRecord, *, with_dump: bool) -> int:
    """One finished attempt of ``job`` (its fate final, so nothing follows it), with a saved dump."""
    j = Journal(cfg.journal_path)
    aid = j.start_attempt("hang hunt", cfg.display_name)
    if with_dump:
        dump = StackDump("py-spy", 1733130000.0, [ThreadStack(job.pid or 0, 7, "drafter-lock-a", "idle", ["wait (train.py:12)"])])
        j.record(aid, STACKS_EVENT, **dump.to_dict())
    j.finish_attempt(aid, "passed")
    j.record(aid, FATE_EVENT, **stopped_fate(job, "by hand").to_dict())
    assert j.flush()
    return aid


def count_calls(transport: Any) -> list[str]:
    """Every call of the transport's ways to run something (the real method still runs)."""
    calls: list[str] = []
    for name in ENTRY_POINTS:
        real = getattr(transport, name)

        def spy(*a: Any, _real: Any = real, _name: str = name, **k: Any) -> Any:
            calls.append(_name)
            return _real(*a, **k)

        setattr(transport, name, spy)
    return calls


def app_with_job(tmp_path: Path, job_proc: Any, *, with_dump: bool = True, **kw: Any) -> tuple[CockpitApp, Path]:
    cfg = local_config(tmp_path)
    job = JobRecord(attempt=1, pid=job_proc.pid, pgid=job_proc.pid, log_path=str(tmp_path / "x.log"), launched_at=1.0)
    aid = seed_journal(cfg, job, with_dump=with_dump)
    engine = make_engine(cfg)
    engine.set_job(job, aid)
    app = create_app(cfg, engine=engine, refresh=False, **kw)
    app.owns_engine = True
    return app, cfg.journal_path


def notes(app: CockpitApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.mark.parametrize("mode", [{"read_only": True}, {"share": True}], ids=["read-only", "share"])
async def test_w_in_read_only_shows_the_saved_dump_and_runs_and_writes_nothing(tmp_path, job_proc, mode):
    app, journal = app_with_job(tmp_path, job_proc, **mode)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = journal.read_bytes()
        calls = count_calls(app.engine.transport)
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, StacksScreen), what="the stacks screen")
        screen = app.screen
        banner = str(screen.query_one("#stacks-banner").render())
        assert banner.startswith("read-only: the last dump, taken ") and "nothing was run in the target" in banner
        assert "drafter-lock-a" in str(screen.query_one("#stacks-text").render())
        await pilot.pause()
        assert calls == []
        assert journal.read_bytes() == before


async def test_w_in_read_only_without_a_saved_dump_says_so(tmp_path, job_proc):
    app, journal = app_with_job(tmp_path, job_proc, with_dump=False, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        before = journal.read_bytes()
        calls = count_calls(app.engine.transport)
        await pilot.press("w")
        await wait_for(pilot, lambda: any("no saved dump" in n for n in notes(app)), what="the no-dump note")
        assert next(n for n in notes(app) if "no saved dump" in n).startswith("read-only: ")
        assert len(app.screen_stack) == 1 and calls == []
        assert journal.read_bytes() == before


async def test_w_outside_read_only_still_dumps_and_saves(tmp_path, job_proc):
    """The other side of the same key (and proof the counting sees a dump): it runs in the target
    and the journal gets one more line."""
    app, journal = app_with_job(tmp_path, job_proc, with_dump=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        lines = len(journal.read_bytes().splitlines())
        calls = count_calls(app.engine.transport)
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, StacksScreen), timeout=20, what="the stacks screen")
        assert calls and not app.screen.query("#stacks-banner")
        await wait_for(pilot, lambda: len(journal.read_bytes().splitlines()) == lines + 1, what="the dump saved")
