"""torch.compile's trace through a whole attempt, against the lab (real sshd, the pct emulator).

The job (tests/lab/jobs/replay_trace.py) needs no torch: it writes a recorded trace
(tests/fixtures/torch_trace/) into the ``$TORCH_TRACE`` cockpit set, over a few seconds, then
trains.  The filter runs in the container on its own channel; the engine's summary, the journal,
``cockpit history --json``, the verdict's words and the pruning of old trace directories are
checked, and what crossed the link and the filter's CPU are measured (printed, and written to
``$COCKPIT_COMPILE_MEASURE`` when set).  Real torch jobs through whole attempts:
tests/test_compile_torch_lab.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.compile import CompileSummary, CompileTracker
from cockpit.core.compile_follow import shell_pids
from cockpit.core.events import CompileUpdated, Event
from cockpit.core.journal import Journal
from cockpit.core.layers import Outcome
from tests.lab import await_for
from tests.lab.runs import script_command

pytestmark = pytest.mark.lab

FIXTURES = Path(__file__).parent / "fixtures" / "torch_trace"
CLK_TCK = os.sysconf("SC_CLK_TCK")
#: how often the compile workers' CPU is sampled (a measurement, not a synchronisation)
SAMPLE_S = 0.1


def expected(case: str) -> CompileSummary:
    t = CompileTracker()
    for f in sorted((FIXTURES / case).glob("dedicated_log_torch_trace_*.log")):
        t.feed(f.read_bytes(), f.name)
    t.close()
    return t.summary()


def comparable(s: CompileSummary) -> dict[str, Any]:
    d = s.to_dict()
    for k in ("events", "malformed"):
        d.pop(k)
    return d


def fixture_in(lab: Any, case: str) -> Path:
    dest = Path(lab.workspace()) / f"fixture-{case}"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(FIXTURES / case, dest)
    return dest


def collect(eng: Any) -> list[CompileUpdated]:
    seen: list[CompileUpdated] = []

    def on(ev: Event) -> None:
        if isinstance(ev, CompileUpdated):
            seen.append(ev)

    eng.subscribe(on)
    return seen


class FilterCPU:
    """Samples the filter process's utime+stime (``/proc/PID/stat``) while it runs: the lab's
    container is this machine, so its processes are visible here."""

    def __init__(self, trace_dir_prefix: str) -> None:
        self.prefix = trace_dir_prefix
        self.ticks: dict[int, int] = {}
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}

    def sample(self) -> None:
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if b"-c" not in argv or not any(a.startswith(self.prefix.encode()) for a in argv) or b"dedicated_log_torch_trace_" not in b"".join(argv):
                    continue
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            self.ticks[pid] = int(fields[11]) + int(fields[12])
            now = time.monotonic()
            self.first.setdefault(pid, now)
            self.last[pid] = now

    async def run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(SAMPLE_S)

    @property
    def cpu_s(self) -> float:
        return sum(self.ticks.values()) / CLK_TCK

    @property
    def seen_s(self) -> float:
        return sum(self.last[p] - self.first[p] for p in self.first)


async def test_a_replayed_trace_reaches_the_engine_the_journal_and_history(lab: Any, lab_config: Any, engines: Any) -> None:
    ws = Path(lab.workspace())
    fix = fixture_in(lab, "recompile_storm")
    cmd = script_command(lab, "replay_trace.py", fix, "--over", 4, "--steps", 40, "--interval", 0.05)
    cfg = lab_config(job={"command": cmd}, compile={"keep": 1})
    eng = engines(cfg)
    updates = collect(eng)
    cpu = FilterCPU(f"{ws}/.cockpit-trace/")
    sampler = asyncio.get_running_loop().create_task(cpu.run())
    t0 = time.monotonic()
    try:
        res = await eng.attempt("replayed trace")
        assert res.outcome is Outcome.PASSED, res.verdict.summary()
        n = res.attempt
        trace_dir = f"{ws}/.cockpit-trace/attempt-{n}"
        assert res.job is not None and res.job.trace_dir == trace_dir
        log = Path(cfg.log_path(n)).read_text()
        assert f"TORCH_TRACE={trace_dir}\n" in log  # the job's environment had it
        fol = eng.compile.followers.get(n)
        assert fol is not None
        await await_for(lambda: any(u.final and u.attempt == n for u in updates), 30, "the final compile summary after the job ended")
    finally:
        sampler.cancel()
    wall = time.monotonic() - t0
    want = expected("recompile_storm")
    final = next(u for u in updates if u.final and u.attempt == n).summary
    assert comparable(final) == comparable(want)
    assert final.frames[0].function == "grow" and final.frames[0].compiles == 4 and final.frames[0].limit_hit
    live = [u for u in updates if not u.final and u.attempt == n]
    assert live and live[-1].summary.totals == want.totals  # seen while the job ran, not only at the end
    streamed = fol.bytes_in - fol.bytes_whole
    measure = {"trace_bytes": sum(f.stat().st_size for f in Path(trace_dir).iterdir()), "link_bytes": fol.bytes_in,
               "streamed_bytes": streamed, "final_read_bytes": fol.bytes_whole, "wall_s": round(wall, 2),
               "link_bytes_per_s": round(fol.bytes_in / wall, 1), "streamed_bytes_per_filter_s": round(streamed / cpu.seen_s, 1) if cpu.seen_s else None,
               "filter_cpu_s": cpu.cpu_s,
               "filter_seen_s": round(cpu.seen_s, 2), "filter_cpu_pct": round(100 * cpu.cpu_s / cpu.seen_s, 2) if cpu.seen_s else None,
               "updates": len(updates)}
    print("compile trace measure:", json.dumps(measure))
    if os.environ.get("COCKPIT_COMPILE_MEASURE"):
        Path(os.environ["COCKPIT_COMPILE_MEASURE"]).write_text(json.dumps(measure))
    assert cpu.ticks, "the filter ran in the container"
    assert fol.bytes_in < measure["trace_bytes"] / 5  # the filter sends a fraction of the trace

    # the journal: written with the verdict, again when the final read changed it
    await await_for(lambda: (r := Journal(cfg.journal_path).get(n)) is not None and r.compile is not None
                    and r.compile["totals"] == want.totals, 15, "the compile event in the journal")
    out = subprocess.run(["cockpit", "--config", str(cfg.path), "history", "--json"], capture_output=True, text=True, timeout=60, check=True)
    row = next(r for r in json.loads(out.stdout) if r["attempt"] == n)
    assert row["compile"]["totals"]["recompiles"] == 3 and row["compile"]["frames"][0]["function"] == "grow"
    md = subprocess.run(["cockpit", "--config", str(cfg.path), "history", "--markdown"], capture_output=True, text=True, timeout=60, check=True)
    assert "**torch.compile:** compiled 1 frame, 3 recompiles (grow:" in md.stdout

    # cockpit status: the alerts as findings with their advice
    st = subprocess.run(["cockpit", "--config", str(cfg.path), "status", "--json", "--quick"], capture_output=True, text=True, timeout=60)
    found = [f for f in json.loads(st.stdout)["findings"] if f["kind"].startswith("compile-")]
    assert [f["kind"] for f in found] == ["compile-recompile-limit"] and "mark_dynamic" in found[0]["advice"], st.stdout[-2000:]

    # a second attempt: its own directory, and the first one's pruned (keep = 1)
    res2 = await eng.attempt("again")
    assert res2.outcome is Outcome.PASSED, res2.verdict.summary()
    assert res2.job is not None and res2.job.trace_dir == f"{ws}/.cockpit-trace/attempt-{res2.attempt}"
    assert not Path(trace_dir).exists() and Path(res2.job.trace_dir).is_dir()
    assert "removed 1 older trace dir" in next(s.detail for s in res2.verdict.stages if s.name.endswith("prepare"))


async def test_a_new_engine_takes_up_a_running_jobs_trace(lab: Any, lab_config: Any, engines: Any) -> None:
    fix = fixture_in(lab, "thread_race")
    cmd = script_command(lab, "replay_trace.py", fix, "--over", 1, "--steps", 400, "--interval", 0.05)
    cfg = lab_config(job={"command": cmd})
    res = await engines(cfg).attempt("first cockpit")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    again = engines(cfg)  # another cockpit (the TUI started later) while the job runs
    again.resume_following()
    want = expected("thread_race")
    await await_for(lambda: (s := again.compile.summary(res.attempt)) is not None and comparable(s) == comparable(want), 20,
                    "the running job's trace read by the new engine")
    assert [a.kind for a in want.alerts] == ["threaded_compile"]
    # the filter's stream shell is named (cockpit's own process, not the job's): it runs the filter
    pids = shell_pids(again.transport)
    assert len(pids) == 1  # the target's view (its pid namespace): asked there
    res2 = await again.transport.run(f"for c in $(cat /proc/{pids[0]}/task/*/children); do tr '\\0' ' ' </proc/$c/cmdline; echo; done")
    assert "dedicated_log_torch_trace_" in res2.text, res2.text[:500]


async def test_a_job_still_compiling_at_startup_timeout_says_so(lab: Any, lab_config: Any, engines: Any) -> None:
    fix = fixture_in(lab, "recompile_storm")
    cmd = script_command(lab, "replay_trace.py", fix, "--over", 1, "--hang")
    eng = engines(lab_config(job={"command": cmd, "startup_timeout": 4}))
    res = await eng.attempt("slow compile")
    fs = res.verdict.failed_stage
    assert fs is not None and fs.layer.value == "app", res.verdict.summary()
    assert re.search(r"still compiling `grow` \(recompile_storm\.py:14\) for \d+ s: no progress marker within startup_timeout", fs.detail), fs.detail
    assert fs.data["compiling"][0]["function"] == "grow"


async def test_a_compile_failure_is_named_in_the_failed_stage(lab: Any, lab_config: Any, engines: Any) -> None:
    fix = fixture_in(lab, "compile_failure")
    cmd = script_command(lab, "replay_trace.py", fix, "--over", 1, "--crash")
    eng = engines(lab_config(job={"command": cmd}))
    res = await eng.attempt("broken backend")
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.FAILED and fs is not None, res.verdict.summary()
    assert "torch.compile failed on `f` (compile_failure.py:13): BackendCompilerFailed: backend='broken_backend' raised" in fs.detail, fs.detail


async def test_the_users_own_torch_trace_is_read_and_not_replaced(lab: Any, lab_config: Any, engines: Any) -> None:
    ws = Path(lab.workspace())
    own = ws / "my-trace"
    shutil.rmtree(own, ignore_errors=True)
    fix = fixture_in(lab, "two_ranks")
    cmd = script_command(lab, "replay_trace.py", fix, "--over", 1, "--steps", 20)
    eng = engines(lab_config(job={"command": cmd, "env": {"TORCH_TRACE": str(own)}}))
    updates = collect(eng)
    res = await eng.attempt("my own trace dir")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert f"TORCH_TRACE={own}\n" in Path(eng.cfg.log_path(res.attempt)).read_text()
    await await_for(lambda: any(u.final for u in updates), 30, "the final summary")
    final = next(u for u in updates if u.final).summary
    assert final.ranks == [0, 1] and comparable(final) == comparable(expected("two_ranks"))

