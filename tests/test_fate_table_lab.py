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
           keep the process alive (``jobsim --crash loopdeath``);  the threads named (Slurm: the
           then the user stops it: nothing left, still ``died``    threads live on its nodes, unnamed)
hang       its main thread blocks in a read nobody answers         ``stalled`` (``stall_after`` 3 s)
cancel     cancelled from outside: ``kill -TERM`` of its process   ``vanished (process)``: gone with
           group inside the target (a user's ``kill``, ``docker    its supervisor, no exit status;
           exec … kill``), ``scancel`` on Slurm                    Slurm: ``stopped`` (CANCELLED)
=========  =====================================================  ==================================

Then the relaunch loop: a failed attempt (the seed's race: the drafters die, the loop runs on), and
the next attempt, whose stop stage must leave nothing of the old job running (no process of its
group in the target; on Slurm, its id no longer in ``squeue``), and whose failed predecessor reads
``stopped`` by cockpit.  A runtime whose row says otherwise than the table is a bug, never a skip.

One lab container (or the Slurm cluster) per runtime, shared by its cells, one journal per
runtime, so each cell's attempt also stops the job the previous cell left, as the user's loop
does.  The module fixture ``table`` runs the five rows at once, each in an event loop (a thread) of
its own as each user's cockpit is a process of its own, the cells of a row one after the other;
each ``test_fate_table[runtime-cell]`` re-raises its own cell's failure, so a cell fails (or could
be marked) alone.  Short windows: settle 0.5 s, fate checks every 0.5 s; the whole table takes
about 50 s on an idle 2-core machine (the cells in series took 2.5 min).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
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
#: the crash (and the finish) waits for the cell's go-file, which the cell creates once the attempt passed
GO = ("--go-file", "{go}")
LATE = 5
#: the hang comes once the cell's go-file is there (the attempt passed), at step 40 at the earliest;
#: its stall window, 3 s, is one a job starved of CPU under load does not fall silent for in the settle window
HANG_AT = 40
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
        from cockpit.core.config import load_config

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
            work = self.workdir()
            over.update(job={**job, "workdir": work, "log": f"{work}/train-{{attempt}}.log"}, deploy={"dest": f"{work}/src"})
            if self.name == "host":
                over["gpu"] = None
        self.lab.write_config(path, **over)
        return load_config(path)

    def workdir(self) -> str:
        return str(self.slurm.work) if self.slurm is not None else f"{self.lab.workspace(self.ctid or 200)}/fates-{self.name}"

    def touch(self, path: str, *, remove: bool = False) -> None:
        """Create (or remove) a file where the job runs: the job's go-file."""
        if self.slurm is not None or self.ctid is None:
            if remove:
                Path(path).unlink(missing_ok=True)
            else:
                Path(path).touch()
        else:
            r = self.lab.exec_in(self.ctid, f"{'rm -f' if remove else 'touch'} {path}")
            assert r.returncode == 0, r.stderr

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


#: case → (the job's arguments, [verify] overrides); the fate each runtime must read is :func:`expected`
CASES: dict[str, tuple[tuple[object, ...], dict[str, Any]]] = {
    "finish": (("--steps", 5, "--interval", 0.05, *GO), {}),
    "signal": ((*STEPS, "--crash", "sigkill", "--crash-at", LATE, *GO), {}),
    "loopdeath": ((*STEPS, "--crash", "loopdeath", "--crash-at", LATE, *GO), {}),
    "hang": ((*STEPS, "--hang", "syscall", "--hang-at", HANG_AT, *GO), {"stall_after": 3.0}),
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


def fate_of(cfg: Any, attempt: int) -> Any:
    rec = Journal(cfg.journal_path).get(attempt)
    return latest_fate(rec) if rec is not None else None


def stages(v: Any) -> str:
    return "; ".join(f"{s.name}: {s.status.value} {s.detail}" for s in v.stages)


# -- the cells: each a coroutine with its own assertions, run one after the other on its row -------------

async def _case(row: Row, case: str, made: list[Engine]) -> None:
    args, verify = CASES[case]
    go = f"{row.workdir()}/go-{case}"
    await asyncio.to_thread(row.touch, go, remove=True)
    cfg = row.config(*(str(a).replace("{go}", go) for a in args), **verify)
    eng = Engine(cfg)  # a new cockpit, as `cockpit attempt` is; its job is left running for the next cell's stop stage
    made.append(eng)
    res = await eng.attempt(f"{row.name}: {case}", wait=True)
    assert res.outcome is Outcome.PASSED, stages(res.verdict)
    assert res.job is not None and res.job.started
    if case == "cancel":
        await asyncio.to_thread(row.cancel, res.job)
    if "--go-file" in args:
        await asyncio.to_thread(row.touch, go)
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
    if case == "loopdeath":  # it will not exit by itself: stopping it is the user's choice, and the story stays a death
        v = await eng.run_action("stop")
        assert v.ok, stages(v)
        assert await asyncio.to_thread(row.leftovers, res.job) == []
        assert_fate(fate_of(cfg, res.attempt), row.name, case)


def _history(cfg: Any) -> dict[int, dict[str, Any]]:
    r = subprocess.run([sys.executable, "-m", "cockpit", "history", "--json", "-c", str(cfg.path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return {row["attempt"]: row for row in json.loads(r.stdout)}


async def _relaunch(row: Row, made: list[Engine]) -> None:
    cfg = row.config(*RACE)
    made.append(Engine(cfg))
    first = await made[-1].attempt(f"{row.name}: the seed's race", wait=True, follow=False)
    assert first.outcome is Outcome.FAILED and first.verdict.layer is Layer.APP, stages(first.verdict)
    fs = first.verdict.failed_stage
    assert fs is not None and "FX traced a dynamo-optimized function" in fs.detail, fs.detail
    old = first.job
    assert old is not None and await asyncio.to_thread(row.leftovers, old), "the race's loop runs on after the failed verdict"

    cfg = row.config(*STEPS)
    made.append(Engine(cfg))  # a new cockpit, as `cockpit attempt` again
    second = await made[-1].attempt(f"{row.name}: the fix", wait=True)
    assert second.outcome is Outcome.PASSED, stages(second.verdict)
    term = next(s for s in second.verdict.stages if s.name == "stop: terminate")
    assert term.status is Status.OK, stages(second.verdict)
    if row.slurm is not None:
        assert f"cancelled Slurm job {old.sched_id}" in term.detail, term.detail
    left = await asyncio.to_thread(row.leftovers, old)
    assert left == [], f"{row.name}: the old job still runs after the next attempt's stop: {left}"

    h = await asyncio.to_thread(_history, cfg)
    assert h[first.attempt]["outcome"] == "failed" and h[first.attempt]["layer"] == "app", h[first.attempt]
    f = h[first.attempt]["fate"]
    assert f is not None and f["state"] == "stopped" and f["cause"].startswith("by cockpit"), f
    if row.slurm is not None:
        assert old.sched_id in f["cause"], f
    assert h[second.attempt]["outcome"] == "passed" and h[second.attempt]["fate"]["state"] == "running", h[second.attempt]
    print(f"\n{row.name}: stop after a failed attempt: {term.detail}  |  failed attempt's fate: {f['state']}: {f['cause']}")


CELLS = (*CASES, "relaunch")


async def _row(row: Row) -> dict[str, BaseException | None]:
    """Every cell of one runtime, in order (each attempt's stop stage stops the previous cell's job);
    a cell's failure is kept for its own test and the row goes on."""
    got: dict[str, BaseException | None] = {}
    made: list[Engine] = []
    try:
        for cell in CELLS:
            try:
                await (_relaunch(row, made) if cell == "relaunch" else _case(row, cell, made))
                got[cell] = None
            except Exception as e:  # noqa: BLE001  (re-raised by the cell's own test)
                got[cell] = e
            finally:
                for eng in made:
                    await eng.close()
                made.clear()
    finally:
        await _stop_last(row.dir / "cockpit.toml")
    return got


async def _stop_last(path: Path) -> None:
    """The last cell's job (every other one was stopped by the next cell's attempt)."""
    from cockpit.core.config import load_config

    if not path.exists():
        return
    eng = Engine(load_config(path))
    try:
        if eng.job is not None:
            await eng.run_action("stop")
    finally:
        await eng.close()


@pytest.fixture(scope="module")
def table(request: pytest.FixtureRequest, lab: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Runs the whole table once: the five rows at the same time (each on its own target), the
    cells of a row one after the other.  ``table[runtime][cell]``: None (passed), the cell's
    exception, or a skip reason (the Slurm lab cannot run here)."""
    (lab.dir / "src").mkdir(exist_ok=True)
    (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
    rows: list[Row] = []
    out: dict[str, Any] = {}
    # only the rows whose cells were selected (``-k slurm`` runs the Slurm row alone)
    wanted = {item.callspec.params["runtime"] for item in request.session.items
              if item.module is request.module and hasattr(item, "callspec") and "runtime" in item.callspec.params}
    try:
        for name in [n for n in RUNTIMES if n in wanted]:
            d = tmp_path_factory.mktemp(f"fates-{name}")
            if name == "slurm":
                try:
                    cluster = request.getfixturevalue("slurm_lab")
                except pytest.skip.Exception as e:  # only a skip: under CI the fixture fails instead
                    out[name] = str(e)
                    continue
                cluster.reset()
                rows.append(Row(name, lab, d, slurm=cluster, target={"name": "cluster", "runtime": "slurm", "container": None}))
            elif name in ENGINE_CT:
                ctid = ENGINE_CT[name]
                lab.add_engine_container(name, f"{name}-fates", ctid)
                rows.append(Row(name, lab, d, ctid=ctid,
                                target={"runtime": name, "container": f"{name}-fates", "ctid": ctid, name: str(lab.bin_dir / name)}))
            elif name == "host":
                rows.append(Row(name, lab, d, target={"name": "lab-host", "runtime": "none", "container": None}))
            else:
                rows.append(Row(name, lab, d, ctid=200))

        # each row in an event loop of its own, as each user's cockpit is a process of its own: one
        # loop's targets on one host share its SSH connection (see cockpit.core.remote.link)
        with ThreadPoolExecutor(len(rows), thread_name_prefix="fate-row") as pool:
            for r, got in zip(rows, pool.map(lambda r: asyncio.run(_row(r)), rows), strict=True):
                out[r.name] = got
        yield out
    finally:
        for r in rows:
            if r.slurm is not None:
                r.slurm.reset()
            elif r.ctid in ENGINE_CT.values():
                lab.remove_container(r.ctid)
        lab.reset()


@pytest.mark.timeout(300)  # the first cell runs the whole table (about a minute)
@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_fate_table(table: dict[str, Any], runtime: str, cell: str) -> None:
    """One cell: ``runtime`` × ``cell`` read what the table says (see the module doc)."""
    got = table[runtime]
    if isinstance(got, str):
        pytest.skip(got)
    err = got[cell]
    if err is not None:
        raise err
