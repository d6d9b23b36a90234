"""Adoption against the lab: jobs started by hand inside container 200 (not by cockpit), adopted
through the real Engine and the installed command, followed, killed from outside, stopped."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cockpit.core.actions.strays import find_strays
from cockpit.core.config import Config
from cockpit.core.engine import Engine
from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Status
from tests.lab import Lab, await_for, wait_for
from tests.lab.runs import fate_of

CT = 200


def start_by_hand(lab: Lab, name: str, *args: object, out: str = "file", setsid: bool = True) -> tuple[int, Path]:
    """``python3 jobsim.py ARGS`` started by a shell inside the container (cockpit knows nothing of
    it); ``out``: "file" (``> LOG 2>&1``) or "pipe" (``| cat``).  Returns its pid there and its log."""
    ws = lab.workspace(CT)
    log, pidf = ws / f"{name}.log", ws / f"{name}.pid"
    for f in (log, pidf):
        f.unlink(missing_ok=True)
    cmd = shlex.join([*lab.jobsim_argv("--steps", 0, "--interval", 0.2, *args)])
    pre = "setsid " if setsid else ""
    if out == "file":
        script = f"cd {ws} && {pre}{cmd} > {log} 2>&1 < /dev/null & echo $! > {pidf}"
    else:  # its stdout is a pipe into cat
        inner = f"({cmd} 2>&1 & echo $! > {pidf}; wait) | cat > /dev/null"
        script = f"cd {ws} && setsid sh -c {shlex.quote(inner)} < /dev/null > /dev/null 2>&1 &"
    lab.exec_in(CT, script, check=True)
    wait_for(lambda: pidf.exists() and pidf.read_text().strip().isdigit(), 20, message=f"{name}'s pid file")
    pid = int(pidf.read_text())
    if out == "file":
        wait_for(lambda: log.exists() and "step" in log.read_text(), 20, message=f"{name}'s first step")
    return pid, log


def alive_in_ct(lab: Lab, pid: int) -> bool:
    r = lab.exec_in(CT, f"cat /proc/{pid}/stat 2>/dev/null")
    return bool(r.stdout.strip()) and r.stdout.rsplit(")", 1)[-1].split()[:1] != ["Z"]


@pytest.fixture
def by_hand(lab: Lab) -> Iterator[list[int]]:
    """Pids started by hand in the container; killed after the test."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        lab.exec_in(CT, f"kill -9 {pid} 2>/dev/null")


@pytest.fixture
def cfg(lab_config: Callable[..., Config]) -> Config:
    return lab_config()


async def test_adopt_follow_and_died(lab: Lab, cfg: Config, by_hand: list[int]) -> None:
    pid, log = start_by_hand(lab, "adopt-a")
    by_hand.append(pid)
    eng = Engine(cfg)
    try:
        v = await eng.adopt(pid)
        assert v.ok, v.to_dict()
        stages = {s.name: s for s in v.stages}
        assert "progress marker seen: step" in stages["verify: progress"].detail
        assert f"adopted pid {pid}" in stages["verify: spawned"].detail
        rec = Journal(cfg.journal_path).attempts()[-1]
        assert rec.note == "adopted" and rec.outcome_name == "passed"
        assert rec.job["pid"] == pid and rec.job["adopted"] is True and rec.job["log_path"] == str(log)
        assert rec.job["start_time"] > 0 and "jobsim" in rec.job["command"]
        ev = next(e for e in Journal(cfg.journal_path).events() if e.get("attempt") == rec.attempt and e.get("event") == "adopt")
        assert ev["trigger"] == "adopt" and ev["argv"][1].endswith("jobsim.py") and ev["start_time"] == rec.job["start_time"]
        # its log is followed: the follower reads on from where verify stopped
        assert eng.follower is not None and eng.job is not None and eng.job.adopted
        seen = eng.follower.reader.scan.progress_count
        await await_for(lambda: eng.follower is not None and eng.follower.reader.scan.progress_count > seen + 2, 15,
                        "the follower reads new steps")
        assert fate_of(cfg, rec.attempt).state == "running"
        # started by hand with [job] command in [job] workdir, it was a stray; adopted, it is cockpit's own
        ctx = eng.context()
        assert [s.leader for s in await find_strays(ctx, cfg.job.command, cfg.job.workdir, None)] == [pid]
        assert await find_strays(ctx, cfg.job.command, cfg.job.workdir, eng.job) == []
        lab.exec_in(CT, f"kill -9 {pid}", check=True)
        f = await await_for(lambda: (x := fate_of(cfg, rec.attempt)) is not None and x.final and x, 20, "a final fate")
        assert f.state == "died" and f.layer == Layer.PROCESS.value and "cannot be observed" in f.cause, f
    finally:
        await eng.close()


async def _strays(cfg: Config) -> tuple[list[int], list[int]]:
    """The strays' pids without a recorded job, and beside the job a fresh cockpit finds in the journal."""
    eng = Engine(cfg)
    try:
        ctx = eng.context()
        bare = await find_strays(ctx, cfg.job.command, cfg.job.workdir, None)
        mine = await find_strays(ctx, cfg.job.command, cfg.job.workdir, eng.job)
        return sorted(p for s in bare for p in s.pids), sorted(p for s in mine for p in s.pids)
    finally:
        await eng.close()


def test_cli_adopt_then_cockpit_stop_stops_it_and_nothing_else(lab: Lab, cfg: Config, by_hand: list[int], tmp_path: Path) -> None:
    # two jobs started by one shell without job control: they share its process group
    pid, _ = start_by_hand(lab, "adopt-b", setsid=False)
    sib, _ = start_by_hand(lab, "adopt-sib", setsid=False)
    by_hand += [pid, sib]
    conf = str(tmp_path / "cockpit.toml")
    r = subprocess.run([shutil.which("cockpit") or "cockpit", "adopt", str(pid), "--json", "--config", conf],
                       capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr + r.stdout
    doc = json.loads(r.stdout)
    assert doc["ok"] is True and any(s["name"] == "adopt: identify" for s in doc["stages"])
    rec = Journal(cfg.journal_path).attempts()[-1]
    assert rec.job["pid"] == pid and rec.job["pgid"] == pid  # not the shared group: stop reaches the job only
    assert asyncio.run(_strays(cfg)) == ([pid, sib], [sib])  # adopted: no longer a stray (its sibling still is one)
    cockpit = shutil.which("cockpit")
    assert cockpit, "the installed cockpit command"
    r = subprocess.run([cockpit, "stop", "--json", "--config", conf], capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr + r.stdout
    stop = {s["name"]: s for s in json.loads(r.stdout)["stages"]}
    assert stop["terminate"]["status"] == "ok" and stop["nothing left"]["status"] == "ok", stop
    assert not alive_in_ct(lab, pid)
    assert alive_in_ct(lab, sib), "the sibling in the same process group was signalled"


async def test_adopt_a_job_writing_to_a_pipe(lab: Lab, cfg: Config, by_hand: list[int]) -> None:
    pid, _ = start_by_hand(lab, "adopt-pipe", out="pipe")
    by_hand.append(pid)
    eng = Engine(cfg)
    try:
        v = await eng.adopt(pid, follow=False)
        fs = v.failed_stage
        assert fs is not None and fs.layer is Layer.PROCESS and fs.name == "adopt: output", v.to_dict()
        assert "pipe" in fs.detail and "cannot read it until the next launch" in fs.detail and "[job] log" in fs.advice
        alive = next(s for s in v.stages if s.name == "adopt: alive")
        assert alive.status is Status.OK
        rec = Journal(cfg.journal_path).attempts()[-1]
        assert rec.note == "adopted" and rec.job["pid"] == pid and rec.job["log_path"] == ""
    finally:
        await eng.close()


async def test_a_zombie_or_a_gone_pid_is_refused_in_the_process_layer(lab: Lab, cfg: Config, by_hand: list[int]) -> None:
    ws = lab.workspace(CT)
    zf = ws / "zombie.pid"
    zf.unlink(missing_ok=True)
    # the child exits at once; its parent execs into a sleep that never reaps it
    lab.exec_in(CT, f"setsid sh -c 'sleep 0 & echo $! > {zf}; exec sleep 60' < /dev/null > /dev/null 2>&1 &", check=True)
    wait_for(lambda: zf.exists() and zf.read_text().strip().isdigit(), 20, message="the zombie's pid")
    zpid = int(zf.read_text())
    wait_for(lambda: not alive_in_ct(lab, zpid) and lab.exec_in(CT, f"cat /proc/{zpid}/stat").stdout.strip(), 20, message="a zombie")
    gone = int(lab.exec_in(CT, "sh -c 'echo $$'", check=True).stdout)
    eng = Engine(cfg)
    try:
        before = len(Journal(cfg.journal_path).attempts())
        for pid, words in ((zpid, "is a zombie"), (gone, "it is gone")):
            v = await eng.adopt(pid)
            fs = v.failed_stage
            assert fs is not None and fs.name == "adopt: identify" and fs.layer is Layer.PROCESS, v.to_dict()
            assert words in fs.detail and str(pid) in fs.detail
        assert len(Journal(cfg.journal_path).attempts()) == before  # nothing adopted, nothing journalled
        assert eng.job is None
    finally:
        await eng.close()
        lab.exec_in(CT, f"kill $(cat /proc/{zpid}/stat | cut -d' ' -f4) 2>/dev/null")
