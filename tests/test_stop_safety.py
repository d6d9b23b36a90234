"""Stop and strays never signal what is not the job: real processes on this machine (local transport).

A record or a stray whose pid is 1 or whose process group is 0, 1 or missing (a Docker job running as
the container's PID 1 has group 0 inside its namespace) is refused with a message in the stage: no
exception, no signal, no match against group 0 (the kernel's threads).  Every signal to the leader
pid is guarded by its start time in the same command, so a reused pid is never KILLed.
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys
import threading
from typing import Any

import pytest

from cockpit.core.actions.base import ActionContext
from cockpit.core.actions.job import JobRecord, launch, signal_group, stop, unsafe_ids
from cockpit.core.actions.strays import Stray, find_strays, refusal, stop_strays, strays_stage
from cockpit.core.config import parse_config
from cockpit.core.layers import Status, Verdict
from cockpit.core.procstat import read_local_stat
from cockpit.core.runtimes import transport_for
from tests.lab import wait_for


@pytest.fixture
async def ctx(tmp_path):
    cfg = parse_config(f"""
[target]
transport = "local"
[job]
workdir = "{tmp_path}"
command = "sleep 600"
stop_timeout = 0.3
[deploy]
source = "{tmp_path}"
dest = "{tmp_path}"
[cache]
paths = []
[journal]
path = "{tmp_path}/j/journal.jsonl"
""")
    transport = transport_for(cfg)
    yield ActionContext(cfg, transport)
    await transport.close()


@pytest.fixture
def sleeper():
    """``make() -> (Popen, start_time)``: a real process leading its own group; killed afterwards."""
    made: list[subprocess.Popen] = []

    def make():
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        made.append(p)
        st = wait_for(lambda: read_local_stat(p.pid), 5)
        return p, st.start_time

    yield make
    for p in made:
        p.kill()
        p.wait()


def _alive(p: subprocess.Popen) -> bool:
    return p.poll() is None


@pytest.mark.parametrize("pgid", [0, 1, None])
async def test_stop_refuses_a_record_whose_group_is_0_1_or_missing(ctx, sleeper, pgid):
    p, start = sleeper()
    v = await stop(ctx, JobRecord(attempt=1, pid=p.pid, pgid=pgid, start_time=start))
    ident = v.stages[0]
    assert ident.name.endswith("identify job") and ident.status is Status.SKIPPED, v.summary()
    assert "not signalled" in ident.detail and f"group {pgid}" in ident.detail
    assert v.failed_stage is None, v.summary()  # never "still running after KILL: members of group 0"
    assert not any(s.name.endswith(("terminate", "nothing left")) and s.status is not Status.NOT_REACHED
                   for s in v.stages[1:]), v.summary()
    assert _alive(p)  # the process the record names was never signalled (pgid or pid is no fallback)


async def test_stop_refuses_pid_1(ctx):
    v = await stop(ctx, JobRecord(attempt=1, pid=1, pgid=1, start_time=1))
    assert v.failed_stage is None and "pid 1 is the container's init" in v.stages[0].detail


async def test_a_good_record_is_still_stopped(ctx, sleeper):
    p, start = sleeper()
    threading.Thread(target=p.wait, daemon=True).start()  # its parent (this test) reaps it when it dies
    v = await stop(ctx, JobRecord(attempt=1, pid=p.pid, pgid=p.pid, start_time=start))
    assert v.ok, v.summary()
    assert p.wait(5) == -15  # TERM


@pytest.mark.parametrize("pgid", [0, 1])
async def test_stop_strays_refuses_a_stray_whose_group_is_0_or_1(ctx, sleeper, pgid):
    p, start = sleeper()
    s = Stray(pgid=pgid, pids=[p.pid], leader=p.pid, start_time=start)
    assert refusal(s) is not None
    left = await stop_strays(ctx, [s], 0.3)  # before: ValueError (group 1) or TERM to the leader's own group (0)
    assert left == []
    assert _alive(p)


def test_unsafe_ids_names_each_reason():
    assert "init" in unsafe_ids(1, 1)
    assert "outside this PID namespace" in unsafe_ids(57, 0)
    assert "every process" in unsafe_ids(57, 1)
    assert "no process group" in unsafe_ids(57, None)
    assert "no usable pid" in unsafe_ids(None, 57) and "no usable pid" in unsafe_ids(0, 57)
    assert unsafe_ids(57, 57) is None


@pytest.mark.parametrize("pid, pgid", [(1, 1), (1, 0), (4242, 0)])
def test_the_stop_confirmation_names_a_refused_record_instead_of_raising(pid, pgid):
    from types import SimpleNamespace

    from cockpit.ui.confirmtext import stop_commands

    body, cmd = stop_commands(SimpleNamespace(job=JobRecord(attempt=2, pid=pid, pgid=pgid, start_time=5), cfg=None))
    assert "Stop signals nothing" in body and f"process group {pgid}" in body and "kill" not in cmd


async def test_the_signal_to_the_leader_pid_is_guarded_by_its_start_time(ctx, sleeper):
    group, _ = sleeper()   # the job's group: signalled by number, whatever the leader's fate
    other, start = sleeper()  # a process now holding the leader's pid (as after a reuse)
    rec = JobRecord(pid=other.pid, pgid=group.pid)
    res = await ctx.run(signal_group("KILL", rec, start_time=start + 1))  # not the recorded process any more
    assert res.exit_code == 0
    assert group.wait(5) == -9
    assert _alive(other)  # a reused pid is never KILLed
    await ctx.run(signal_group("KILL", JobRecord(pid=other.pid, pgid=other.pid), start_time=start))
    assert other.wait(5) == -9


async def test_a_child_in_a_session_of_its_own_is_signalled_only_while_its_start_time_holds(ctx, sleeper):
    # stop signals what the job started in a session of its own (its group); a pid reused since
    # stop's first look is never signalled
    from dataclasses import replace

    from cockpit.core.actions.stop import _signal_own

    other, start = sleeper()  # leads its own group, like a Popen(start_new_session=True) trainer
    seen = read_local_stat(other.pid)
    assert seen is not None and seen.pgid == other.pid
    stale = replace(seen, start_time=start + 1)
    assert (await ctx.run(_signal_own("KILL", stale))).exit_code == 0
    assert _alive(other)  # not the process stop saw: never signalled
    await ctx.run(_signal_own("KILL", seen))
    assert other.wait(5) == -9


# -- against the lab: a copy of the job that is the container's PID 1 -------------------------------


@pytest.mark.lab
async def test_a_stray_that_is_the_containers_pid_1_is_refused_in_the_stage(lab, lab_config, engines):
    """Like a Docker job run as the container's main process: PID 1, its group outside the namespace."""
    lab.add_container(245)
    try:
        argv = lab.exec_in(245, "tr '\\0' '\\n' </proc/1/cmdline").stdout.split("\n")
        cfg = lab_config(target={"container": 245}, job={"command": shlex.join([a for a in argv if a]), "workdir": "/"})
        ctx = ActionContext(cfg, engines(cfg).transport)
        found = await find_strays(ctx, cfg.job.command, "/", None)
        assert [(s.leader, s.pgid) for s in found] == [(1, 0)]
        v = Verdict("stop")
        await strays_stage(ctx, None, v, "stop")  # before: ValueError out of signal_group
        failed = v.failed_stage
        assert failed is not None and failed.name.endswith("strays"), v.summary()
        assert "pid 1 (group 0) is never signalled" in failed.detail and "container's init" in failed.detail
        assert "main process" in failed.advice and failed.data["refused"] == [1]
        assert lab.container_running(245)  # nothing was signalled
    finally:
        lab.remove_container(245)


class _TakesThePidAfterTerm(ActionContext):
    """The real lab transport; right after stop's TERM has ended the job, another process is started
    with the job leader's pid (``ns_last_pid`` in the container's own PID namespace): a reuse."""

    lab: Any = None
    ctid = 0
    leader = 0
    imposter: int | None = None

    async def run(self, command: str, *, timeout: float = 10.0):
        res = await super().run(command, timeout=timeout)
        if "kill -s TERM" in command and self.imposter is None:
            self.imposter = await asyncio.to_thread(self._take_pid)
        return res

    def _take_pid(self) -> int:
        leader, lab, ct = self.leader, self.lab, self.ctid
        wait_for(lambda: lab.exec_in(ct, f"test -e /proc/{leader}").returncode != 0, 10, message="the job's leader never went")
        script = (f"for i in 1 2 3 4 5 6 7 8 9 10; do echo {leader - 1} >/proc/sys/kernel/ns_last_pid; "
                  f"sleep 600 </dev/null >/dev/null 2>&1 & p=$!; [ $p = {leader} ] && break; kill $p; done; echo $p")
        got = int(lab.exec_in(ct, script).stdout.split()[-1])
        assert got == leader, "could not take the leader's pid"
        return got


@pytest.mark.lab
async def test_a_reused_leader_pid_is_never_waited_for_nor_killed(lab, lab_config, engines):
    lab.add_container(246)
    try:
        cfg = lab_config(target={"container": 246}, job={"stop_timeout": 1})
        ctx = _TakesThePidAfterTerm(cfg, engines(cfg).transport)
        v, rec = await launch(ctx, 1)
        assert v.ok and rec is not None and rec.pgid == rec.pid, v.summary()
        ctx.lab, ctx.ctid, ctx.leader = lab, 246, rec.pid
        v = await stop(ctx, rec)
        assert ctx.imposter == rec.pid
        assert v.ok, v.summary()
        assert [s.detail for s in v.stages if s.name.endswith("terminate")] == ["stopped with TERM"]  # before: KILL after 1s
        stat = lab.exec_in(246, f"cat /proc/{rec.pid}/stat").stdout
        assert ") S " in stat and "(sleep)" in stat  # the process now holding the pid lives on
    finally:
        lab.remove_container(246)
