"""A read-only viewer (``--read-only``, ``--share``, the browser view) follows the job's fate and
shows it, but never writes the journal: the cockpit that acts records the story once.

A real engine on the local transport, a real job process killed under it; the journal compared
byte for byte.  The same flow with an acting cockpit journals the fate (proof the follower ran).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.job import JobRecord
from cockpit.core.journal import Journal
from cockpit.core.procstat import read_stat
from cockpit.ui.app import create_app
from tests.test_ui_support import local_config, make_engine, wait_for

SIZE = (80, 24)


def app_following(tmp_path: Path, job_proc: Any, **kw: Any) -> Any:
    cfg = local_config(tmp_path, extra="[verify]\nfate_interval = 0.2\n")
    stat = read_stat(Path(f"/proc/{job_proc.pid}/stat").read_text())
    assert stat is not None
    job = JobRecord(attempt=1, pid=job_proc.pid, pgid=job_proc.pid, start_time=stat.start_time,
                    log_path=str(tmp_path / "x.log"), launched_at=1.0)
    j = Journal(cfg.journal_path)
    aid = j.start_attempt("viewer", cfg.display_name)
    j.record(aid, "job", **{k: v for k, v in job.to_dict().items() if k != "attempt"})
    j.finish_attempt(aid, "passed")
    assert j.flush()
    engine = make_engine(cfg)
    engine.set_job(job, aid)
    app = create_app(cfg, engine=engine, refresh=False, **kw)
    app.owns_engine = True
    return app, cfg.journal_path, aid


@pytest.mark.parametrize("mode", [{"read_only": True}, {"share": True}], ids=["read-only", "share"])
async def test_a_viewer_shows_the_fate_and_journals_nothing(tmp_path, job_proc, mode):
    app, journal, aid = app_following(tmp_path, job_proc, **mode)
    before = journal.read_bytes()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.follower is not None, what="the follower")
        job_proc.kill()
        job_proc.wait()
        await wait_for(pilot, lambda: aid in app.engine._viewed_fates and app.engine._viewed_fates[aid].state != "running",
                       timeout=15, what="the viewer to see the job end")
    assert journal.read_bytes() == before


async def test_an_acting_cockpit_journals_the_fate(tmp_path, job_proc):
    app, journal, aid = app_following(tmp_path, job_proc)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.engine.follower is not None, what="the follower")
        job_proc.kill()
        job_proc.wait()
        await wait_for(pilot, lambda: b'"fate"' in journal.read_bytes(), timeout=15, what="the fate journalled")


async def test_a_cockpit_started_beside_a_running_job_names_its_log_before_the_first_line(tmp_path, job_proc):
    """The log pane said "no job launched yet" over the attempts pane's "running" until the first
    read of the log came (seconds on a loaded host): it names the job's log meanwhile."""
    from cockpit.ui.panes.log import LogPane

    app, _, _ = app_following(tmp_path, job_proc, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        pane = app.query_one(LogPane)
        pane.tick()
        subtitle = str(pane.border_subtitle)
        assert "no job launched yet" not in subtitle and "x.log" in subtitle, subtitle
