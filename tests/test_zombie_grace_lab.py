"""Zombies judged by persistence: the stop stage and the observer, against the lab (real namespaces, real inits).

Right after stop kills the job, its orphans are briefly ``Z`` until PID 1 reaps them.  The lab's
init can reap late (``reap_delay`` in the container's conf.json): the stop must wait for the reap,
not blame the init.  Under ``sleepy-init`` (never reaps) the zombie outlives the grace and is named,
with PID 1, as before.  The observer follows the same rule across its polls (:class:`ZombieWatch`).
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from cockpit.core.actions.base import ActionContext
from cockpit.core.actions.job import JobRecord, launch, stop
from cockpit.core.actions.stop import ZOMBIE_GRACE
from cockpit.core.config import parse_config
from cockpit.core.layers import Layer, Status
from cockpit.core.probes.procs import Proc, analyse
from cockpit.core.probes.procs.zombies import ZombieWatch
from cockpit.core.procstat import read_local_stat
from cockpit.core.runtimes import transport_for
from tests.lab import await_for, wait_for

lab_only = pytest.mark.lab


def _stage(v, name):
    return next(s for s in v.stages if s.name == name)


@lab_only
@pytest.mark.parametrize("runtime", ["pct", "docker"])
async def test_orphans_reaped_late_by_pid_1_do_not_fail_the_stop(lab, lab_config, engines, runtime):
    ctid = 241
    if runtime == "pct":
        lab.add_container(ctid, reap_delay=0.3)  # PID 1 reaps, 0.3 s after each death
        target = {"container": ctid}
    else:
        lab.add_engine_container("docker", "late-reaper", ctid, reap_delay=0.3)
        target = {"runtime": "docker", "container": "late-reaper", "ctid": ctid, "docker": str(lab.bin_dir / "docker")}
    try:
        cfg = lab_config(target=target)
        ctx = ActionContext(cfg, engines(cfg).transport)
        v, rec = await launch(ctx, 1)
        assert v.ok and rec is not None, v.summary()
        v = await stop(ctx, rec)
        assert v.ok, v.summary()
        left = _stage(v, "nothing left")
        assert left.status is Status.OK
        # the killed job's processes were seen as zombies of PID 1, re-checked, and reaped
        assert left.data["reaped_zombies"] >= 1, left.detail
        assert left.data["waited_s"] < ZOMBIE_GRACE
        assert "not a known reaping init" not in v.summary() and "zombie (" not in v.summary()
        assert ") Z " not in lab.exec_in(ctid, "cat /proc/[0-9]*/stat").stdout
    finally:
        lab.remove_container(ctid)


@lab_only
async def test_the_seed_zombie_under_a_non_reaping_init_is_still_named(lab, lab_config, engines):
    lab.add_container(242, reaping_init=False)
    try:
        cfg = lab_config(target={"container": 242}, job={"zombie_grace": 1.0})  # [job] zombie_grace
        ctx = ActionContext(cfg, engines(cfg).transport)
        v, rec = await launch(ctx, 1)
        assert v.ok and rec is not None, v.summary()
        v = await stop(ctx, rec)
        assert v.layer is Layer.CONTAINER, v.summary()
        failed = v.failed_stage
        assert failed.name.endswith("nothing left")
        assert "zombie" in failed.detail and "parent 1 (sleepy-init)" in failed.detail
        assert "not a known reaping init" in failed.detail and "does not reap" in failed.detail
        # named only once it had outlived the (configured) grace period: persistence, not one glance
        assert failed.data["zombie_grace_s"] == 1.0 and 1.0 <= failed.data["waited_s"] < ZOMBIE_GRACE
        assert failed.data["pid1_reaps"] is False
        assert "reboot" in failed.advice
    finally:
        lab.remove_container(242)


# -- the observer: one rule across polls ----------------------------------------------------------

INIT = Proc(1, 0, 1, 1, "Ss", 600, 0.0, 1000, "root", "python3", "python3 /srv/app.py")  # a PID 1 that is no init


def _z(pid: int, ppid: int, state: str = "Z", elapsed: int = 30, threads: int = 1) -> Proc:
    return Proc(pid, ppid, pid, pid, state, elapsed, 0.0, 0, "root", "python3", "[python3] <defunct>", threads=threads)


def _zombies(findings):
    return [f for f in findings if f.kind.startswith("zombie")]


def test_a_young_zombie_of_pid_1_is_not_yet_a_finding():
    watch = ZombieWatch(2.0)
    assert _zombies(analyse([INIT], zombie_watch=watch, now=100.0)) == []  # the first look: nothing yet
    with_z = [INIT, _z(40, 1)]
    assert _zombies(analyse(with_z, zombie_watch=watch, now=100.3)) == []  # fresh: PID 1 may be about to reap it
    assert _zombies(analyse([INIT], zombie_watch=watch, now=100.6)) == []  # reaped: never a finding
    assert _zombies(analyse(with_z, zombie_watch=watch, now=110.0)) == []  # a new one (same pid, later): young again
    f = _zombies(analyse(with_z, zombie_watch=watch, now=112.5))  # outlived the grace: a finding, PID 1 named
    assert [x.subject["pid"] for x in f] == [40] and f[0].subject["pid1_reaps"] is False
    assert "never reaps" in f[0].advice


def test_a_zombie_of_an_exiting_parent_waits_and_one_of_a_live_parent_does_not():
    watch = ZombieWatch(2.0)
    analyse([INIT], zombie_watch=watch, now=0.0)
    parent_dying = _z(50, 1)
    live_parent = Proc(60, 1, 60, 60, "S", 90, 0.0, 100, "root", "bash", "bash")
    procs = [INIT, parent_dying, _z(51, 50), live_parent, _z(61, 60)]
    f = _zombies(analyse(procs, zombie_watch=watch, now=0.5))
    assert [x.subject["pid"] for x in f] == [61]  # its parent lives and has not reaped it: named at once


def test_the_seed_zl_is_named_at_once():
    zl = _z(91451, 1, "Zl", elapsed=1027, threads=4)
    f = _zombies(analyse([INIT, zl], zombie_watch=ZombieWatch(2.0), now=5.0))  # there at the first look
    assert [x.kind for x in f] == ["zombie-threads"] and "3 thread(s)" in f[0].summary


async def _one_zombie_under(lab, obs, ctid: int, reaps: bool) -> None:
    await obs.refresh_procs()  # the first look: no zombie there yet
    lab.exec_in(ctid, "setsid sleep 0.05 </dev/null >/dev/null 2>&1 &")
    wait_for(lambda: ") Z " in lab.exec_in(ctid, "cat /proc/[0-9]*/stat").stdout, 5)
    seen = time.monotonic()
    v = await obs.refresh_procs()
    if reaps and not any(p.is_zombie for p in v.procs):
        return  # the init reaped it before this poll: nothing to judge (rare)
    assert any(p.is_zombie and p.ppid == 1 for p in v.procs)
    assert _zombies(v.findings) == [], v.findings  # young: not yet a finding

    async def settled():
        v = await obs.refresh_procs()
        return v if (_zombies(v.findings) or not any(p.is_zombie for p in v.procs)) else None

    v = await await_for(settled, timeout=10, interval=0.2)
    if reaps:
        assert _zombies(v.findings) == [] and not any(p.is_zombie for p in v.procs)
    else:
        f = _zombies(v.findings)
        assert f and "sleepy-init" in f[0].summary + f[0].advice + str(f[0].subject)
        assert time.monotonic() - seen >= ZOMBIE_GRACE  # named only once it outlived the grace


@lab_only
async def test_the_observer_waits_for_persistence_against_the_lab(lab, lab_config, engines):
    lab.add_container(243, reap_delay=1.0)  # reaps, 1 s late (less than the grace)
    lab.add_container(244, reaping_init=False)  # never reaps
    try:
        for ctid, reaps in ((243, True), (244, False)):
            await _one_zombie_under(lab, engines(lab_config(target={"container": ctid})).observer, ctid, reaps)
    finally:
        lab.remove_container(243)
        lab.remove_container(244)


# -- the seed's Zl: named at once, real process on this machine ------------------------------------

ZL = ("import ctypes, signal, threading, time\n"
      "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
      "threading.Thread(target=lambda: time.sleep(600), daemon=True).start()\n"
      "ctypes.CDLL(None).pthread_exit(None)\n")  # the leader exits, its thread lives on: Zl


async def test_a_zl_older_than_the_grace_is_named_at_once(tmp_path):
    cfg = parse_config(f"""
[target]
transport = "local"
[job]
workdir = "{tmp_path}"
command = "true"
zombie_grace = 0.5
[deploy]
source = "{tmp_path}"
dest = "{tmp_path}"
[cache]
paths = []
[journal]
path = "{tmp_path}/journal.jsonl"
""")
    p = subprocess.Popen([sys.executable, "-c", ZL], start_new_session=True)
    transport = transport_for(cfg)
    try:
        st = wait_for(lambda: (s := read_local_stat(p.pid)) is not None and s.state.startswith("Z") and s.threads > 1 and s, 5)

        def age() -> float:
            with open("/proc/uptime") as f:
                return float(f.read().split()[0]) - st.start_time / 100

        wait_for(lambda: age() >= 0.6, 5)  # older than the grace
        v = await stop(ActionContext(cfg, transport), JobRecord(attempt=1, pid=p.pid, pgid=p.pid, start_time=st.start_time))
        failed = v.failed_stage
        assert failed is not None and failed.name.endswith("nothing left"), v.summary()
        assert "stuck in the kernel" in failed.detail and f"{p.pid} (Z" in failed.detail
        assert failed.data["waited_s"] == 0  # not re-checked: it was a Zl before stop began
    finally:
        await transport.close()
        p.kill()
        p.wait()
