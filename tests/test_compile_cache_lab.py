"""The clear proven by the trace, and the caches found in the job's environment, against the lab
(real sshd, the pct emulator's container, real sh, du, find and rm).

The job (tests/lab/jobs/replay_trace.py) replays a recorded trace (``cache_cold``: every graph a
miss; ``cache_warm``: every graph a hit) into ``$TORCH_TRACE``; the attempt's ``compile cache``
stage judges it against whether clear-cache ran.  The inventory cases start a job whose environment
sets ``TORCHINDUCTOR_CACHE_DIR`` and run clear-cache while it runs.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.layers import Layer, Outcome, Status
from tests.lab.runs import script_command

pytestmark = pytest.mark.lab

FIXTURES = Path(__file__).parent / "fixtures" / "torch_trace"


@pytest.fixture
def base(lab: Any) -> Iterator[Path]:
    d = Path(lab.workspace()) / f"compile-cache-{uuid.uuid4().hex[:8]}"
    (d / "wd").mkdir(parents=True)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def replay(lab: Any, base: Path, case: str, steps: int = 400) -> str:
    fix = base / f"fixture-{case}"
    shutil.copytree(FIXTURES / case, fix)
    return script_command(lab, "replay_trace.py", fix, "--over", 1, "--steps", steps, "--interval", 0.05)


def a_cache(d: Path) -> Path:
    for part, n in (("fxgraph", 3), ("aotautograd", 2), ("triton", 1)):
        (d / part).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            (d / part / f"entry{i}").write_bytes(b"c" * 70_000)
    return d


def stage(verdict: Any, name: str) -> Any:
    found = [s for s in verdict.stages if s.name == name]
    assert found, [s.name for s in verdict.stages]
    return found[-1]


async def test_a_cold_trace_after_clear_cache_proves_the_clear(lab: Any, lab_config: Any, engines: Any, base: Path) -> None:
    cleared = a_cache(base / "inductor")
    cfg = lab_config(job={"command": replay(lab, base, "cache_cold"), "env": {"TORCHINDUCTOR_CACHE_DIR": str(cleared)}},
                     cache={"paths": [str(cleared)]})
    res = await engines(cfg).attempt("cold after a clear")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert not cleared.exists()
    st = stage(res.verdict, "compile cache")
    assert (st.status, st.layer) == (Status.OK, Layer.APP), st
    assert st.detail == "cold ✔: 2 graphs, every one a cache miss after clear-cache"
    assert st.data["misses"] == 2 and st.data["hits"] == 0 and st.data["cleared"] is True
    names = [s.name for s in res.verdict.stages]
    assert names.index("compile cache") > max(i for i, n in enumerate(names) if n.startswith("verify: "))


async def test_hits_after_clear_cache_fail_the_attempt_naming_the_jobs_cache(lab: Any, lab_config: Any, engines: Any, base: Path) -> None:
    configured = a_cache(base / "configured")
    used = a_cache(base / "used-by-the-job")  # the job's own: cockpit does not clear it (discover is false)
    cfg = lab_config(job={"command": replay(lab, base, "cache_warm"), "env": {"TORCHINDUCTOR_CACHE_DIR": str(used)}},
                     cache={"paths": [str(configured)]})
    res = await engines(cfg).attempt("warm after a clear")
    assert res.outcome is Outcome.FAILED, res.verdict.summary()
    fs = res.verdict.failed_stage
    assert fs is not None and fs.name == "compile cache" and fs.layer is Layer.CONTAINER, res.verdict.summary()
    assert fs.detail == "warm: 2/2 hits after clear-cache: the cache cockpit cleared is not the one the job uses"
    assert f"the job's TORCHINDUCTOR_CACHE_DIR is {used} (the running job's environment)" in fs.advice, fs.advice
    assert not configured.exists() and used.exists()
    # the clear-cache stages had shown the job's cache before the clear, with its size and entries
    caches = stage(res.verdict, "clear-cache: caches")
    assert re.search(re.escape(str(used)) + r" from \[job\] env: inductor \d+ KiB 6 entries \(fxgraph \d+ KiB 3 entries;", caches.detail), caches.detail


async def test_without_a_clear_warm_hits_are_information(lab: Any, lab_config: Any, engines: Any, base: Path) -> None:
    cfg = lab_config(job={"command": replay(lab, base, "cache_warm")}, cache={"paths": []})
    res = await engines(cfg).attempt("no clear")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    st = stage(res.verdict, "compile cache")
    assert (st.status, st.detail) == (Status.OK, "warm: 2/2 hits (no clear-cache this attempt)")


async def test_clear_cache_lists_the_jobs_cache_and_removes_it_only_with_discover(lab: Any, lab_config: Any, engines: Any, base: Path) -> None:
    used = a_cache(base / "ind")
    job = {"command": lab.jobsim_command("--steps", 0, "--interval", 0.2), "env": {"TORCHINDUCTOR_CACHE_DIR": str(used)}}
    cfg = lab_config(job=job, cache={"paths": []})
    eng = engines(cfg)
    res = await eng.attempt("a job with its own cache dir")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    v = await eng.run_action("clear-cache")
    st = stage(v, "caches")
    assert st.status is Status.OK, v.summary()
    # sizes as du measures them on this filesystem (70 000 bytes a file: at least 69 KiB each)
    m = re.search(re.escape(str(used)) + r" from the running job's environment: inductor (\d+) KiB 6 entries "
                  r"\(fxgraph (\d+) KiB 3 entries; aotautograd (\d+) KiB 2 entries; triton (\d+) KiB 1 entry\)", st.detail)
    assert m is not None, st.detail
    total, fx, aot, tri = map(int, m.groups())
    assert fx >= 3 * 69 and aot >= 2 * 69 and tri >= 69 and total >= fx + aot + tri
    assert "shown only ([cache] discover = false)" in st.detail and used.exists()
    found = {f["kind"]: f for f in st.data["found"]}
    assert found["inductor/fxgraph"]["files"] == 3 and found["inductor"]["source"] == "job"

    eng2 = engines(lab_config(job=job, cache={"paths": [], "discover": True}))
    eng2.job, eng2.job_attempt = eng.job, eng.job_attempt
    v2 = await eng2.run_action("clear-cache")
    assert v2.failed_stage is None, v2.summary()
    assert "removed with [cache] paths" in stage(v2, "caches").detail
    assert str(used) in stage(v2, "remove").detail and stage(v2, "gone").status is Status.OK
    assert not used.exists()


async def test_a_discovered_cache_that_is_the_workdir_is_refused(lab: Any, lab_config: Any, engines: Any, base: Path) -> None:
    wd = base / "wd"
    (wd / "train.py").write_text("precious")
    job = {"workdir": str(wd), "command": lab.jobsim_command("--steps", 0, "--interval", 0.2), "env": {"TORCHINDUCTOR_CACHE_DIR": str(wd)}}
    eng = engines(lab_config(job=job, cache={"paths": [], "discover": True}))
    res = await eng.attempt("the cache dir is the workdir")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    v = await eng.run_action("clear-cache")
    st = stage(v, "caches")
    assert f"refused: refusing to clear {wd}" in st.detail and "it is the workdir" in st.detail, st.detail
    assert st.advice.startswith("warning: ") and str(wd) not in st.data["remove"]
    assert (wd / "train.py").read_text() == "precious"


async def test_a_relaunch_says_the_warm_hits_as_information(lab: Any, lab_config: Any, engines: Any, base: Path) -> None:
    cfg = lab_config(job={"command": replay(lab, base, "cache_warm")})
    eng = engines(cfg)
    res = await eng.attempt("first")  # cleared the lab's /tmp/torchinductor_root, yet the replayed graphs hit
    assert res.verdict.failed_stage is not None and res.verdict.failed_stage.name == "compile cache", res.verdict.summary()
    v = await eng.run_action("relaunch")  # no clear: the same hits are information
    assert v.failed_stage is None, v.summary()
    st = stage(v, "compile cache")
    assert (st.status, st.layer, st.detail) == (Status.OK, Layer.APP, "warm: 2/2 hits (no clear-cache this attempt)")


async def test_an_old_job_that_writes_its_cache_as_it_stops_does_not_refill_the_clear(
        lab: Any, lab_config: Any, engines: Any, base: Path) -> None:
    # the old job writes a cache entry on TERM: stopped after clear-cache, it would refill the
    # cleared cache and the new job would hit it ("the cache cockpit cleared is not the one the job
    # uses", a lie: it is the same cache).  Stop comes first, and the removal does not trust the
    # measure taken before stop (the cache was absent then)
    cache = base / "inductor"
    folds = []
    for case in ("cache_cold", "cache_warm"):
        folds.append(base / f"fixture-{case}")
        shutil.copytree(FIXTURES / case, folds[-1])
    script_command(lab, "replay_trace.py")
    cmd = script_command(lab, "cache_on_exit.py", *folds, "--over", 1, "--steps", 400, "--interval", 0.05)
    eng = engines(lab_config(job={"command": cmd, "env": {"TORCHINDUCTOR_CACHE_DIR": str(cache)}},
                             cache={"paths": [str(cache)]}))
    first = await eng.attempt("cold")
    assert first.outcome is Outcome.PASSED, first.verdict.summary()
    assert not cache.exists()  # the replayed job writes no cache of its own while it runs
    second = await eng.attempt("again, the old job flushing as it stops")
    assert second.outcome is Outcome.PASSED, second.verdict.summary()
    names = [s.name.split(":")[0] for s in second.verdict.stages]
    assert names.index("stop") < names.index("clear-cache") < names.index("launch"), names
    assert "flushed the compile cache on exit" in Path(eng.cfg.log_path(first.attempt)).read_text()
    removed = stage(second.verdict, "clear-cache: remove")
    assert "removed 1 path(s)" in removed.detail and "made since the measure" in removed.detail, removed.detail
    st = stage(second.verdict, "compile cache")
    assert st.detail == "cold ✔: 2 graphs, every one a cache miss after clear-cache", st.detail
