"""The compile cache of a real torch job (tests/lab/torch_jobs/cache_extern.py) through real cockpit
attempts in the lab: cold on a first attempt, warm on a relaunch, proven cold after clear-cache, and
``cockpit history --json`` carrying each attempt's compile summary.

A file of its own, apart from tests/test_compile_torch_lab.py (whose helpers and marks it shares):
its three torch jobs run one after another, and ``--dist loadfile`` keeps a file on one worker, so
apart the two files' torch jobs run on two workers at once.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.events import CompileUpdated
from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome, Status
from tests.lab import await_for
from tests.test_compile_torch_lab import FINAL, Watch, cockpit, torch_job
from tests.test_compile_torch_lab import pytestmark as torch_lab_marks

pytestmark = torch_lab_marks


def compile_state(eng: Any, journal: Journal, want: dict[int, str], updates: list[CompileUpdated]) -> str:
    """What each attempt's journal and the engine's compile watch hold (a failed wait's message)."""
    watch = eng.compile
    got = {a: ((r := journal.get(a)) and r.compile and r.compile.get("cache_state")) for a in want}
    finals = {a: any(u.final for u in updates if u.attempt == a) for a in want}
    return (f"want {want}, journal {got}; followers {sorted(watch.followers)} finishing {sorted(watch._finishing)} "
            f"verdict {sorted(watch._verdict)} summaries { {a: s.cache_state for a, s in watch.summaries.items()} } "
            f"final updates {finals}; tasks {sorted(t.get_name() for t in watch._tasks)}")


def stage(verdict: Any, name: str) -> Any:
    found = [s for s in verdict.stages if s.name == name]
    assert found, [s.name for s in verdict.stages]
    return found[-1]


async def step(aw: Any, what: str, deadline: float = 100.0) -> Any:
    """One step of a long test, with a deadline of its own: a step that never ends fails by name
    (the module's hang guard would say only that the test ran out of time)."""
    try:
        return await asyncio.wait_for(aw, deadline)
    except asyncio.TimeoutError:
        pytest.fail(f"{what} did not end within {deadline:g} s")


async def test_the_cache_proven_cold_after_clear_cache_and_warm_on_a_relaunch_and_history_has_it(lab: Any, lab_config: Any, engines: Any) -> None:
    ind = Path(lab.workspace()) / f"inductor-{uuid.uuid4().hex[:8]}"
    cfg = lab_config(job=torch_job(lab, "cache_extern", env={"TORCHINDUCTOR_CACHE_DIR": str(ind)}), cache={"paths": [str(ind)]})
    eng = engines(cfg)
    watch = Watch(eng, lab)
    try:
        watch.start()
        first = await step(eng.attempt("first: the cache is filled"), "the first attempt")
        assert first.outcome is Outcome.PASSED, first.verdict.summary()
        cold = stage(first.verdict, "compile cache")
        assert (cold.status, cold.layer, cold.data["state"]) == (Status.OK, Layer.APP, "cold"), cold
        assert (ind / "fxgraph").is_dir()  # the job wrote its cache where [job] env says
        s1 = await watch.final(first.attempt)
        assert s1.cache_state == "cold" and s1.frame("project") is not None

        # a relaunch clears nothing: the same graphs hit the cache the first attempt filled
        rel = await step(eng.run_action("relaunch"), "the relaunch")
        assert rel.failed_stage is None, rel.summary()
        warm = stage(rel, "compile cache")
        hits, lookups = warm.data["hits"], warm.data["hits"] + warm.data["misses"]
        assert (warm.status, warm.data["cleared"], warm.data["state"]) == (Status.OK, False, "warm"), warm
        assert hits >= 1 and warm.detail == f"warm: {hits}/{lookups} hits (no clear-cache this attempt)"
        assert eng.job is not None
        relaunched = eng.job.attempt
        assert relaunched != first.attempt

        # clear-cache removes the cache the job uses, and says it is gone
        cleared = await step(eng.run_action("clear-cache"), "clear-cache")
        assert cleared.failed_stage is None, cleared.summary()
        assert not ind.exists() and stage(cleared, "gone").status is Status.OK

        # the next attempt: every lookup a miss after the clear, proven by the job's own trace
        watch.start()
        since = len(watch.updates)
        second = await step(eng.attempt("second: after clear-cache"), "the second attempt")
        assert second.outcome is Outcome.PASSED, second.verdict.summary()
        proven = stage(second.verdict, "compile cache")
        assert (proven.status, proven.layer) == (Status.OK, Layer.APP), proven
        assert proven.detail == f"cold ✔: {lookups} graphs, every one a cache miss after clear-cache", proven.detail
        assert proven.data["cleared"] is True and proven.data["hits"] == 0
        s2 = await watch.final(second.attempt)
        watch.measure(second.attempt, f"{lab.workspace()}/.cockpit-trace/attempt-{second.attempt}", "cache_extern")
        assert s2.cache_state == "cold"
        # the relaunch is an attempt of its own: its compiles never count as this attempt's, live either
        live = [u.summary for u in watch.updates[since:] if u.attempt == second.attempt]
        # (a live update may come before the frame's compile ends: the trace has begun, no frame yet)
        shown = [(x.events, x.totals, x.cache_hits) for x in live]
        assert live and len(live[-1].frames) == 1, shown
        assert all(len(x.frames) <= 1 and x.cache_hits == 0 for x in live), shown

        # cockpit history --json: each attempt with its compile summary, the relaunch's warm one too
        assert first.attempt < relaunched < second.attempt
        want = {first.attempt: "cold", relaunched: "warm", second.attempt: "cold"}
        journal = Journal(cfg.journal_path)
        await await_for(lambda: all((r := journal.get(a)) is not None and r.compile is not None and r.compile["cache_state"] == st
                                    for a, st in want.items()), FINAL, lambda: "the compile events in the journal: " + compile_state(eng, journal, want, watch.updates))
        history = {r["attempt"]: r for r in cockpit(cfg, "history", "--json")}
        for a, st in want.items():
            c = history[a]["compile"]
            assert c is not None and c["cache_state"] == st and c["frames"][0]["function"] == "project", (a, c)
            assert c["totals"]["compiles"] == 1 and c["torch_version"] == s2.torch_version
        assert history[second.attempt]["compile"]["cache_misses"] == lookups and history[relaunched]["note"] == "relaunch"
        assert history[relaunched]["compile"]["cache_hits"] == hits and list(history) == [first.attempt, relaunched, second.attempt]
    finally:
        shutil.rmtree(ind, ignore_errors=True)
