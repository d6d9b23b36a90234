"""The same check for every runtime: one table of job endings, run against the lab for ``pct``,
``docker``, ``podman``, the plain host (``runtime = "none"``) and Slurm.

Each cell launches a job through the user's own path (the Engine an ``cockpit attempt`` runs, in a
fresh cockpit per step), sees it pass, then makes it end one way and reads the fate as the user
does: the journal the Engine's follower writes, then ``cockpit status --json``'s reconciling read
(:func:`collect_status`), and ``cockpit history --json`` for the relaunch.  The endings:

=========  =====================================================  ==================================
case       how the job ends                                        fate
=========  =====================================================  ==================================
finish     it runs its steps and exits 0                           ``finished``
signal     it dies by SIGKILL with no traceback (as the OOM        ``died (process)``, the signal
           killer leaves it)                                       named
loopdeath  its main thread raises while 3 non-daemon threads       ``died (app)``, the exception and
           keep the process alive (``jobsim --crash loopdeath``)   the threads named
hang       its main thread blocks in a read nobody answers         ``stalled`` (``stall_after`` 1 s)
cancel     cancelled from outside: ``kill -TERM`` of its process   ``vanished (process)``: gone with
           group inside the target (a user's ``kill``, ``docker    its supervisor, no exit status;
           exec … kill``), ``scancel`` on Slurm                    Slurm: ``stopped`` (CANCELLED)
=========  =====================================================  ==================================

Then the relaunch loop: a failed attempt (the seed's race: the drafters die, the loop runs on), and
the next attempt, whose stop stage must leave nothing of the old job running (no process of its
group in the target; on Slurm, its id no longer in ``squeue``), and whose failed predecessor reads
``stopped`` by cockpit.

One lab container (or Slurm cluster) per runtime, shared by its cells (module-scoped fixtures), one
journal per runtime, so each cell's attempt also stops the job the previous cell left, as the
user's loop does.  Short windows: settle 0.5 s, fate checks every 0.5 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.engine import Engine
from cockpit.core.fate import latest_fate
from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome, Status
from cockpit.core.status import collect_status
from tests.lab import await_for
from tests.lab.slurm import PARTITION, slurm_lab  # noqa: F401  (the session's Slurm cluster, asked for by the slurm row only)

pytestmark = pytest.mark.lab

RUNTIMES = ("pct", "docker", "podman", "host", "slurm")
#: lab containers of the engine rows (clear of the ones other modules of this process use)
ENGINE_CT = {"docker": 251, "podman": 252}

STEPS = ("--steps", 0, "--interval", 0.05)
#: the crash comes 1.5 s after the first step: after the 0.5 s settle window
LATE = 30
#: the seed's race: the drafter threads die at the first step, the training loop runs on for ever
RACE = ("--steps", 0, "--interval", 0.05, "--threads", 3, "--crash", "fx", "--crash-at", 1, "--keep-stepping", -1)
DRAFTERS = "drafter-0, drafter-1, drafter-2"


@dataclass
class Row:
    """One runtime of the table: how its config is written, and how its target is seen from outside."""

    name: str
    lab: Any
    dir: Path
    ctid: int | None = None
    slurm: Any = None
    target: dict[str, Any] = field(default_factory=dict)

    def config(self, *job_args: object, **verify: Any) -> Any:
        from cockpit.config import load_config

        path = self.dir / "cockpit.toml"
        job = {"command": self.lab.jobsim_command(*job_args), "stop_timeout": 3, "startup_timeout": 20,
               "dump_before_stop": False}
        over: dict[str, Any] = {"target": self.target, "verify": {"settle": 0.5, "fate_interval": 0.5, **verify},
                                "journal": {"path": str(self.dir / "journal.jsonl")}}
        if self.slurm is not None:
            work = self.slurm.work
            over.update(job={**job, "workdir": str(work), "log": f"{work}/fates-{{attempt}}.log"},
                        deploy={"source": str(self.lab.dir / "src"), "dest": str(work / "deployed")},
                        cache={"paths": [str(self.slurm.dir / "cache")]}, gpu=None,
                        slurm={"partition": PARTITION, "queue_wait": 3})
        else:
            work = f"{self.lab.workspace(self.ctid or 200)}/fates-{self.name}"
            over.update(job={**job, "workdir": work, "log": f"{work}/train-{{attempt}}.log"}, deploy={"dest": f"{work}/src"})
            if self.name == "host":
                over["gpu"] = None
        self.lab.write_config(path, **over)
        return load_config(path)

    def cancel(self, job: Any) -> None:
        """Cancelled from outside, as the user would: scancel, or kill -TERM of the job's process group."""
        if self.slurm is not None:
            self.slurm.run("/usr/bin/scancel", job.sched_id)
        elif self.ctid is None:
            os.killpg(int(job.pgid), signal.SIGTERM)
        else:
            r = self.lab.exec_in(self.ctid, f"kill -TERM -{int(job.pgid)}")
            assert r.returncode == 0, r.stderr

    def leftovers(self, job: Any) -> list[str]:
        """What of ``job`` still runs in the target: its queued/running Slurm job, or its group's processes."""
        if self.slurm is not None:
            r = self.slurm.run("/usr/bin/squeue", "-h", "-o", "%i %T", check=False)
            return [line for line in r.stdout.splitlines() if line.split()[:1] == [job.sched_id]]
        if self.ctid is None:
            text = subprocess.run(["/bin/sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null"], capture_output=True, text=True).stdout
        else:
            text = self.lab.exec_in(self.ctid, "cat /proc/[0-9]*/stat 2>/dev/null").stdout
        left = []
        for line in text.splitlines():
            if ")" not in line:
                continue
            rest = line[line.rindex(")") + 2:].split()
            if len(rest) > 2 and rest[2] == str(job.pgid):
                left.append(line[:120])
        return left


@pytest.fixture(scope="module", params=RUNTIMES)
def row(request: pytest.FixtureRequest, lab: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Row]:
    name = request.param
    d = tmp_path_factory.mktemp(f"fates-{name}")
    (lab.dir / "src").mkdir(exist_ok=True)
    (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
    if name == "slurm":
        cluster = request.getfixturevalue("slurm_lab")
        cluster.reset()
        r = Row(name, lab, d, slurm=cluster, target={"name": "cluster", "runtime": "slurm", "container": None})
    elif name in ENGINE_CT:
        ctid = ENGINE_CT[name]
        lab.add_engine_container(name, f"{name}-fates", ctid)
        r = Row(name, lab, d, ctid=ctid, target={"runtime": name, "container": f"{name}-fates", "ctid": ctid, name: str(lab.bin_dir / name)})
    elif name == "host":
        r = Row(name, lab, d, target={"name": "lab-host", "runtime": "none", "container": None})
    else:
        r = Row(name, lab, d, ctid=200)
    try:
        yield r
    finally:
        try:
            asyncio.run(_stop_last(d / "cockpit.toml"))  # the last cell's job: each other one was stopped by the next attempt
        finally:
            if r.slurm is not None:
                r.slurm.reset()
            elif name in ENGINE_CT:
                lab.remove_container(ENGINE_CT[name])
            lab.reset()


async def _stop_last(path: Path) -> None:
    from cockpit.config import load_config

    if not path.exists():
        return
    eng = Engine(load_config(path))
    try:
        if eng.job is not None:
            await eng.run_action("stop")
    finally:
        await eng.close()


@pytest.fixture
async def cockpits() -> Any:
    """``make(cfg) -> Engine``: a new cockpit per step, closed afterwards, its job left running as
    the user's ``cockpit attempt`` leaves it (the next cell's attempt stops it in its stop stage)."""
    made: list[Engine] = []

    def make(cfg: Any) -> Engine:
        made.append(Engine(cfg))
        return made[-1]

    yield make
    for e in made:
        await e.close()


def fate_of(cfg: Any, attempt: int) -> Any:
    rec = Journal(cfg.journal_path).get(attempt)
    return latest_fate(rec) if rec is not None else None


def stages(v: Any) -> str:
    return "; ".join(f"{s.name}: {s.status.value} {s.detail}" for s in v.stages)


#: case → (the job's arguments, [verify] overrides, the expected fate: state, layer, texts in its cause)
CASES: dict[str, tuple[tuple[object, ...], dict[str, Any]]] = {
    "finish": (("--steps", 30, "--interval", 0.05), {}),
    "signal": ((*STEPS, "--crash", "sigkill", "--crash-at", LATE), {}),
    "loopdeath": ((*STEPS, "--crash", "loopdeath", "--crash-at", LATE), {}),
    "hang": ((*STEPS, "--hang", "syscall", "--hang-at", LATE), {"stall_after": 1.0}),
    "cancel": (STEPS, {}),
}


def expected(runtime: str, case: str) -> tuple[str, str | None, tuple[str, ...]]:
    if case == "finish":
        return "finished", None, ("exited with code 0",)
    if case == "signal":
        return "died", "process", ("killed by signal 9 (SIGKILL)",)
    if case == "loopdeath":
        held = ("held by threads that outlive the loop",) if runtime == "slurm" else (f"held by 3 threads ({DRAFTERS})",)
        return "died", "app", ("the training loop raised FloatingPointError at ", "loss is nan at step",
                               "the process is still alive", *held, "it will not exit by itself")
    if case == "hang":
        return "stalled", "app", ("no progress for",)
    # cancel
    if runtime == "slurm":
        return "stopped", None, ("CANCELLED",)
    return "vanished", "process", ("the job and its supervisor are gone without an exit status",)


def assert_fate(fate: Any, runtime: str, case: str) -> None:
    state, layer, texts = expected(runtime, case)
    f = fate if isinstance(fate, dict) else fate.to_dict()
    assert (f["state"], f["layer"]) == (state, layer), (runtime, case, f)
    for t in texts:
        assert t in f["cause"], (runtime, case, t, f["cause"])


@pytest.mark.parametrize("case", list(CASES))
async def test_a_passed_job_ends_with_the_fate_the_table_says(row: Row, cockpits: Callable[[Any], Engine], case: str) -> None:
    args, verify = CASES[case]
    cfg = row.config(*args, **verify)
    eng = cockpits(cfg)
    res = await eng.attempt(f"{row.name}: {case}", wait=True)
    assert res.outcome is Outcome.PASSED, stages(res.verdict)
    assert res.job is not None and res.job.started
    if case == "cancel":
        row.cancel(res.job)
    state = expected(row.name, case)[0]

    def reached() -> Any:
        f = fate_of(cfg, res.attempt)
        return f if f is not None and (f.state == state or f.final) else None

    f = await await_for(reached, 25, lambda: f"{row.name}/{case}: fate {fate_of(cfg, res.attempt)}", interval=0.1)
    assert_fate(f, row.name, case)  # as the follower journalled it (the TUI, history)
    report = await collect_status(cfg, quick=True)  # `cockpit status --json`: a fresh cockpit reconciles
    la = report["latest_attempt"]
    assert la["attempt"] == res.attempt and la["outcome"] == "passed", la
    assert_fate(la["fate"], row.name, case)
    assert Journal(cfg.journal_path).get(res.attempt).outcome is Outcome.PASSED  # the outcome is never rewritten


def _history(cfg: Any) -> dict[int, dict[str, Any]]:
    r = subprocess.run([sys.executable, "-m", "cockpit", "history", "--json", "-c", str(cfg.path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return {row["attempt"]: row for row in json.loads(r.stdout)}


async def test_the_next_attempt_stops_what_the_failed_one_left_running(row: Row, cockpits: Callable[[Any], Engine]) -> None:
    cfg = row.config(*RACE)
    first = await cockpits(cfg).attempt(f"{row.name}: the seed's race", wait=True, follow=False)
    assert first.outcome is Outcome.FAILED and first.verdict.layer is Layer.APP, stages(first.verdict)
    fs = first.verdict.failed_stage
    assert fs is not None and "FX traced a dynamo-optimized function" in fs.detail, fs.detail
    old = first.job
    assert old is not None and row.leftovers(old), "the race's loop runs on after the failed verdict"

    cfg = row.config(*STEPS)
    second = await cockpits(cfg).attempt(f"{row.name}: the fix", wait=True)  # a new cockpit, as `cockpit attempt` again
    assert second.outcome is Outcome.PASSED, stages(second.verdict)
    term = next(s for s in second.verdict.stages if s.name == "stop: terminate")
    assert term.status is Status.OK, stages(second.verdict)
    if row.slurm is not None:
        assert f"cancelled Slurm job {old.sched_id}" in term.detail, term.detail
    assert row.leftovers(old) == [], f"{row.name}: the old job still runs after the next attempt's stop: {row.leftovers(old)}"

    h = _history(cfg)
    assert h[first.attempt]["outcome"] == "failed" and h[first.attempt]["layer"] == "app", h[first.attempt]
    f = h[first.attempt]["fate"]
    assert f is not None and f["state"] == "stopped" and f["cause"].startswith("by cockpit"), f
    if row.slurm is not None:
        assert old.sched_id in f["cause"], f
    assert h[second.attempt]["outcome"] == "passed" and h[second.attempt]["fate"]["state"] == "running", h[second.attempt]
    print(f"\n{row.name}: stop after a failed attempt: {term.detail}  |  failed attempt's fate: {f['state']}: {f['cause']}")

