"""The action lock is the target's, on its host: two cockpits with two config directories (two
checkouts, two laptops) cannot act on one container at once.

Against the lab: a real sshd, the pct emulator; each lab has its own lock directory on the host
(``COCKPIT_LOCK_DIR`` in its sshd's environment), so parallel labs never share a lock.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from cockpit.core.config import load_config
from cockpit.core.engine import Busy, Engine
from cockpit.core.layers import Layer
from cockpit.core.status import collect_status
from cockpit.core.target_lock import DEAD_HOLDER_S, Holder, lock_name
from tests.lab import await_for, faults

pytestmark = pytest.mark.lab


@pytest.fixture
def two_configs(lab, tmp_path):
    """Two config files in two directories (two journals) for the lab's container 200."""
    (lab.dir / "src").mkdir(exist_ok=True)
    (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
    paths = []
    for d in ("checkout-a", "checkout-b"):
        p = lab.write_config(tmp_path / d / "cockpit.toml", target={"name": f"ct200-{d[-1]}"})
        paths.append(p)
    yield paths
    lab.reset()


def lock_dir(lab) -> Path:
    return lab.dir / "run-lock"


def who_files(lab) -> list[Path]:
    return sorted(lock_dir(lab).glob("cockpit-pct-200.lock.who.*"))


async def test_a_second_checkout_is_refused_naming_the_holder_and_observes_meanwhile(lab, two_configs):
    cfg_a, cfg_b = (load_config(p) for p in two_configs)
    assert cfg_a.journal_path.parent != cfg_b.journal_path.parent  # nothing shared on this machine's disk
    a, b = Engine(cfg_a), Engine(cfg_b)
    try:
        async with a.exclusive("attempt"):
            # the lock and its holder note are on the host, named after the runtime and the container
            assert (lock_dir(lab) / "cockpit-pct-200.lock").exists()
            [who] = who_files(lab)
            h = Holder.parse(who.read_text())
            assert h is not None and (h.action, h.pid, h.host) == ("attempt", os.getpid(), socket.gethostname())
            with pytest.raises(Busy) as ei:
                await b.run_action("stop")
            msg = str(ei.value)
            assert msg.startswith("ct200-b is busy: attempt by ")
            assert f"@{socket.gethostname()} since " in msg and f"(pid {os.getpid()})" in msg
            assert b.current_action is None
            # observation never takes the lock
            report = await collect_status(cfg_b, engine=b)
            assert report["ok"], report["verdict"]
        # released: the note is gone and the other checkout acts
        await await_for(lambda: not who_files(lab), 10, "the holder note removed")
        async with b.exclusive("stop"):
            assert len(who_files(lab)) == 1
    finally:
        await a.close()
        await b.close()


async def test_the_cli_of_another_checkout_exits_75_naming_the_holder(lab, two_configs):
    a = Engine(load_config(two_configs[0]))
    try:
        async with a.exclusive("attempt"):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "cockpit", "attempt", "--note", "from the other checkout", "-c", str(two_configs[1]),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 75, (out, err)
        text = err.decode()
        assert "ct200-b is busy: attempt by " in text and f"(pid {os.getpid()})" in text, text
        # refused before anything ran: the other checkout's journal holds no attempt
        journal = load_config(two_configs[1]).journal_path
        assert not journal.exists() or "attempt_started" not in journal.read_text()
    finally:
        await a.close()


HOLDER = """
import asyncio, sys
from cockpit.core.config import load_config
from cockpit.core.engine import Engine

async def main():
    eng = Engine(load_config(sys.argv[1]))
    async with eng.exclusive("attempt"):
        print("held", flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


async def test_a_killed_holder_frees_the_target_and_wait_takes_it(lab, two_configs, caplog):
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", HOLDER, str(two_configs[0]),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    b = Engine(load_config(two_configs[1]))
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line == b"held\n", await proc.stderr.read() if proc.stderr else b""
        with pytest.raises(Busy) as ei:
            await b.attempt("while the other one holds it")
        assert f"(pid {proc.pid})" in str(ei.value)
        caplog.set_level(logging.INFO, logger="cockpit.core.target_lock")
        waiting = asyncio.ensure_future(b.run_action("deploy", wait=True))
        await await_for(lambda: "trying again" in caplog.text, 20, "--wait polling the held lock")
        assert not waiting.done()
        os.kill(proc.pid, signal.SIGKILL)  # no cleanup at all: the connection's end frees the host's lock
        await proc.wait()
        v = await asyncio.wait_for(waiting, 30)
        assert v.ok, v.summary()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await b.close()


def test_lock_names_follow_runtime_and_container(lab, tmp_path):
    def name(**target):
        return lock_name(load_config(lab.write_config(tmp_path / "c.toml", target=target)))

    assert name() == "cockpit-pct-200.lock"
    assert name(runtime="docker", container="trainer", ctid=200) == "cockpit-docker-trainer.lock"
    assert name(runtime="none", container=None).startswith("cockpit-none-var_tmp_cockpit-lab-")


@pytest.mark.parametrize("sessions", [2, 3])
async def test_a_tight_max_sessions_never_stalls_an_action_for_the_lock(lab, two_configs, sessions):
    """The host's lock holds no SSH channel (a detached holder tied to the connection keeps it):
    where sshd allows only two or three, the action keeps the lock and its commands still run."""
    lab.set_max_sessions(sessions)
    try:
        eng = Engine(load_config(two_configs[0]))
        try:
            assert (await eng.transport.run("true")).ok  # the target's session, as during any action
            async with eng.exclusive("attempt"):
                assert who_files(lab) and not eng._target_lock.without_host
                # the lock's own short channel is gone at sshd's end too (a loaded host acknowledges
                # a close late, and at MaxSessions 2 the next channel would be refused meanwhile)
                await await_for(lambda: faults.channel_count(lab) <= 1, 10, "the lock's channel closed at sshd")
                # the host's shell (the observer's), then a command on a channel of its own
                assert (await asyncio.wait_for(eng.observer.host.run("echo host"), 30)).stdout == b"host\n"
                assert (await asyncio.wait_for(eng.transport.run_host("echo own"), 30)).stdout == b"own\n"
                assert who_files(lab), "still held"
            await await_for(lambda: not who_files(lab), 10, "the lock given back")
            v = await asyncio.wait_for(eng.run_action("deploy"), 60)
            assert v.ok, v.summary()
        finally:
            await eng.close()
    finally:
        lab.set_max_sessions(10)


async def test_many_targets_of_one_host_act_at_once_in_one_process(lab, tmp_path):
    """A group on one host (``cockpit attempt --group``: one event loop, one shared connection):
    five targets each hold their lock while their actions open channels (uploads, host commands);
    none waits for ever behind the others' locks."""
    ctids = [231, 232, 233, 234, 235]
    for ct in ctids:
        lab.add_container(ct)
    try:
        engines = [Engine(load_config(lab.write_config(tmp_path / f"c{ct}" / "cockpit.toml", target={"name": f"ct{ct}", "container": ct})))
                   for ct in ctids]

        async def act(eng: Engine) -> bytes:
            async with eng.exclusive("attempt"):
                await asyncio.gather(*(eng.transport.run_host("sleep 0.2; echo ok") for _ in range(3)))
                return (await eng.transport.run_channel("echo in-target")).stdout

        try:
            outs = await asyncio.wait_for(asyncio.gather(*(act(e) for e in engines)), 90)
            assert outs == [b"in-target\n"] * len(ctids)
            assert not any(e._target_lock.without_host for e in engines)
        finally:
            for e in engines:
                await e.close()
    finally:
        for ct in ctids:
            lab.remove_container(ct)


async def test_a_host_out_of_reach_is_the_actions_ssh_fault_not_busy(lab, two_configs):
    """No host, no host lock: the action goes on under this machine's lock and fails where it
    should (connectivity, layer ssh), saying why it had no lock on the host."""
    eng = Engine(load_config(two_configs[0]))
    lab.stop()  # sshd down (two_configs puts it back)
    try:
        v = await asyncio.wait_for(eng.run_action("deploy"), 60)
        assert v.layer is Layer.SSH, v.summary()
        assert eng._target_lock.without_host.startswith("no lock on the host (unavailable: ")
    finally:
        await eng.close()


async def test_slurm_the_lock_is_on_the_login_node_named_after_the_workdir(lab, tmp_path):
    """A Slurm target's host is its login node (the lab's sshd here): two checkouts submitting from
    one workdir are one target."""
    paths = [lab.write_config(tmp_path / d / "cockpit.toml", target={"name": f"cluster-{d}", "runtime": "slurm", "container": None},
                              gpu=None, slurm={"partition": "debug"}) for d in ("a", "b")]
    a, b = (Engine(load_config(p)) for p in paths)
    name = lock_name(a.cfg)
    assert name.startswith("cockpit-slurm-") and name == lock_name(b.cfg)
    try:
        async with a.exclusive("attempt"):
            assert (lock_dir(lab) / name).exists()
            with pytest.raises(Busy, match=rf"^cluster-b is busy: attempt by .*\(pid {os.getpid()}\)"):
                await b.run_action("stop")
        async with b.exclusive("stop"):
            pass
    finally:
        await a.close()
        await b.close()


async def test_a_lock_held_with_no_note_is_waited_for_a_moment_then_busy(lab, two_configs):
    """A holder that has removed its note is on its way out (a release in flight, a connection that
    just closed): an action without ``--wait`` waits for it a moment instead of being refused, and
    is refused naming the lock file when it stays."""
    eng = Engine(load_config(two_configs[0]))
    lock_dir(lab).mkdir(parents=True, exist_ok=True)
    fh = open(lock_dir(lab) / "cockpit-pct-200.lock", "a+")  # held by no cockpit: no note beside it
    try:
        fcntl.flock(fh, fcntl.LOCK_EX)
        asyncio.get_running_loop().call_later(1.0, fcntl.flock, fh, fcntl.LOCK_UN)
        t0 = time.monotonic()
        async with eng.exclusive("stop"):
            waited = time.monotonic() - t0
            assert not eng._target_lock.without_host
        assert 0.9 <= waited < DEAD_HOLDER_S, waited
        fcntl.flock(fh, fcntl.LOCK_EX)  # and now one that stays
        t0 = time.monotonic()
        with pytest.raises(Busy, match=r"^ct200-a is busy: another cockpit holds .*cockpit-pct-200\.lock on its host$"):
            await eng.run_action("stop")
        assert time.monotonic() - t0 >= DEAD_HOLDER_S
    finally:
        fh.close()
        await eng.close()
