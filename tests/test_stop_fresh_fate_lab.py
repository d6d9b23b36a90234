"""Stop right after the fate follower read the job running: no reading of the job's state before
the signal (stop's own process table says whether it still runs); a job whose leader is gone by
then is still read first, and its end is its own (died), not a stop by cockpit."""

from __future__ import annotations

import cockpit.core.engine as engine_mod
from cockpit.core.fate import FRESH_S, latest_fate
from cockpit.core.layers import Status
from cockpit.core.outcome import Outcome
from tests.lab.util import await_for


def _count_reads(monkeypatch) -> list[int]:
    reads: list[int] = []
    real = engine_mod.read_fate

    async def counting(*a, **kw):
        reads.append(1)
        return await real(*a, **kw)

    monkeypatch.setattr(engine_mod, "read_fate", counting)
    return reads


async def _passed(lab, lab_config, engines):
    eng = engines(lab_config(job={"command": lab.jobsim_command("--steps", "0", "--interval", "0.05")}, verify={"settle": 0.3}))
    res = await eng.attempt("fresh")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    return eng, res


async def test_stop_after_a_fresh_running_reading_reads_nothing_first(lab, lab_config, engines, monkeypatch):
    eng, res = await _passed(lab, lab_config, engines)
    await await_for(lambda: eng.follower is not None and eng.follower.running_now(res.job, FRESH_S), 20, "a fresh reading")
    reads = _count_reads(monkeypatch)
    v = await eng.run_action("stop")
    assert v.failed_stage is None, v.summary()
    assert reads == []  # the follower's reading was enough: no job-state read before the signal
    fate = latest_fate(eng.journal.get(res.attempt))
    assert fate is not None and fate.state == "stopped" and "by cockpit" in fate.cause


async def test_a_job_gone_since_the_reading_is_read_first_and_not_told_as_stopped(lab, lab_config, engines, monkeypatch):
    eng, res = await _passed(lab, lab_config, engines)
    await await_for(lambda: eng.follower is not None and eng.follower.running_now(res.job, FRESH_S), 20, "a fresh reading")
    reads = _count_reads(monkeypatch)
    lab.exec_in(200, f"kill -s KILL -- -{res.job.pgid} 2>/dev/null || kill -KILL -{res.job.pgid}", check=True)  # the whole job dies behind cockpit's back
    v = await eng.run_action("stop")
    assert v.failed_stage is None, v.summary()
    term = next(s for s in v.stages if s.name.endswith("terminate"))
    assert term.status is Status.SKIPPED  # nothing was signalled
    fate = latest_fate(eng.journal.get(res.attempt))
    told_before = fate is not None and fate.final and reads == []  # the follower saw the death first: no reading needed
    assert told_before or len(reads) == 1, (fate, reads)  # else read once, before any signal
    assert fate is None or fate.state != "stopped", fate
