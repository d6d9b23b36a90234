"""Faults and unsafe settings, injected against the lab (a real sshd, emulated Proxmox), and what the
user sees: host keys checked whatever the ssh config says, no silent agent forwarding, remote lines
capped, sshd's MaxSessions, a connection cut mid-verify, cockpit killed mid-attempt, the session
shell killed over and over.  (A container rebooted under a running job: tests/test_verdict_truth.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from cockpit.core.actions.base import ActionContext, VerdictBuilder
from cockpit.core.actions.job import launch, stop
from cockpit.core.actions.jobstate import reader_for
from cockpit.core.actions.reattach import read_job
from cockpit.core.actions.verify import VERIFY_PLAN
from cockpit.core.connectivity import check_connectivity
from cockpit.core.events import StageProgress
from cockpit.core.layers import Layer, Outcome, Status
from cockpit.core.remote.base import RemoteError
from cockpit.core.remote.lines import LINE_MAX, OUTPUT_MAX
from cockpit.core.remote.ssh import SSHTransport
from cockpit.core.runtimes import transport_for
from cockpit.ui.shell import shell_command
from tests.lab import faults
from tests.lab.util import await_for, wait_for

pytestmark = pytest.mark.lab

MiB = 1 << 20


def ssh_config(tmp_path: Path, *lines: str) -> Path:
    """An OpenSSH client config for every host, as a user's ~/.ssh/config might be."""
    p = tmp_path / "ssh_config"
    p.write_text("Host *\n" + "".join(f"  {line}\n" for line in lines))
    return p


def sshd_connections_logged(lab) -> int:
    return lab.sshd_log.read_text(errors="replace").count("Connection from")


# -- host keys and agent forwarding ---------------------------------------------------------------

@pytest.mark.parametrize("known", ["none", "/dev/null"])
async def test_an_ssh_config_that_checks_no_host_key_is_refused_before_connecting(lab, lab_config, tmp_path, known):
    bad = ssh_config(tmp_path, f"UserKnownHostsFile {known}", "StrictHostKeyChecking no")
    cfg = lab_config(ssh={"known_hosts": None, "config_file": str(bad)})
    marker = lab.workspace() / "must-not-exist"
    seen = sshd_connections_logged(lab)
    t = transport_for(cfg)
    try:
        with pytest.raises(RemoteError) as ei:
            await t.run(f"touch {marker}")
        v = await check_connectivity(t, cfg)
    finally:
        await t.close()
    e = ei.value
    assert e.layer is Layer.SSH and "host key would not be checked" in e.message and f"UserKnownHostsFile {known}" in e.message
    assert f"ssh-keyscan -p {lab.port} 127.0.0.1 >> ~/.ssh/known_hosts" in e.hint and "[ssh] known_hosts" in e.hint
    assert v.layer is Layer.SSH and v.stages[0].status is Status.FAIL and "would not be checked" in v.stages[0].detail
    assert not marker.exists() and sshd_connections_logged(lab) == seen  # refused before even a TCP connection


def test_known_hosts_dev_null_in_cockpit_config_is_a_config_error():
    from cockpit.core.config import ConfigError, parse_config

    with pytest.raises(ConfigError) as ei:
        parse_config('[target]\nhost = "gpu1"\n[ssh]\nknown_hosts = "/dev/null"\n')
    assert ei.value.key == "ssh.known_hosts" and "checks no host key" in ei.value.problem


async def test_strict_host_key_checking_no_does_not_accept_an_unknown_key(lab, lab_config, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    bad = ssh_config(tmp_path, f"UserKnownHostsFile {empty}", "StrictHostKeyChecking no")
    cfg = lab_config(ssh={"known_hosts": None, "config_file": str(bad)})
    marker = lab.workspace() / "must-not-exist"
    t = transport_for(cfg)
    try:
        with pytest.raises(RemoteError) as ei:
            await t.run(f"touch {marker}")
    finally:
        await t.close()
    assert ei.value.layer is Layer.SSH and "not trusted" in ei.value.message
    assert "ssh-keyscan" in ei.value.hint and "StrictHostKeyChecking" in ei.value.hint
    assert not marker.exists() and empty.read_text() == ""  # nothing learned on first use


async def test_ssh_known_hosts_in_cockpit_config_wins_over_the_ssh_config(lab, lab_config, tmp_path):
    bad = ssh_config(tmp_path, "UserKnownHostsFile /dev/null", "StrictHostKeyChecking no")
    cfg = lab_config(ssh={"known_hosts": str(lab.known_hosts), "config_file": str(bad)})
    t = transport_for(cfg)
    try:
        assert (await t.run("echo checked")).stdout == b"checked\n"
    finally:
        await t.close()


@pytest.fixture
def agent(tmp_path, monkeypatch):
    """A real ssh-agent on a socket of this test, in SSH_AUTH_SOCK."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(sock.exists, 10, "ssh-agent did not create its socket")
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        yield sock
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("forward", [False, True])
async def test_agent_forwarding_only_with_forward_agent_never_from_the_ssh_config(lab, lab_config, tmp_path, agent, forward):
    cfg_file = ssh_config(tmp_path, "ForwardAgent yes")
    cfg = lab_config(ssh={"config_file": str(cfg_file), "forward_agent": forward})
    t = transport_for(cfg)
    try:
        r = await t.run_host('echo "${SSH_AUTH_SOCK:-none}"')
    finally:
        await t.close()
    assert r.ok, r.err_text
    assert (r.text.strip() != "none") is forward, r.text  # the host sees an agent only when cockpit's config asks


def _shell_argv(cfg, command: str) -> list[str]:
    """The TUI's shell command line, run without a terminal: BatchMode, and ``command`` instead of pct enter."""
    argv = shell_command(cfg).argv
    assert argv[-1] == "pct enter 200"
    return [a for a in argv[:-1] if a != "-t"][:1] + ["-o", "BatchMode=yes"] + [a for a in argv[:-1] if a != "-t"][1:] + [command]


def test_the_interactive_shell_checks_host_keys_and_forwards_no_agent_whatever_the_ssh_config_says(lab, lab_config, tmp_path, agent):
    bad = ssh_config(tmp_path, "UserKnownHostsFile /dev/null", "StrictHostKeyChecking no", "ForwardAgent yes")
    marker = lab.workspace() / "must-not-exist"
    cfg = lab_config(ssh={"known_hosts": None, "config_file": str(bad)})
    r = subprocess.run(_shell_argv(cfg, f"touch {marker}"), capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 255 and "Host key verification failed" in r.stderr and not marker.exists()
    cfg = lab_config(ssh={"known_hosts": str(lab.known_hosts), "config_file": str(bad)})
    r = subprocess.run(_shell_argv(cfg, 'echo "agent=${SSH_AUTH_SOCK:-none}"'), capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip() == "agent=none", r.stderr


# -- line caps ---------------------------------------------------------------------------------------

@pytest.fixture
async def tr(lab_config):
    t = transport_for(lab_config())
    assert isinstance(t, SSHTransport)
    yield t
    await t.close()


async def test_a_50_mib_line_through_the_session_over_ssh_is_cut_in_bounded_memory(tr, lab):
    assert (await tr.run("echo warm")).ok
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        r = await tr.run("head -c 52428800 /dev/zero | tr '\\0' x; echo; echo last", timeout=60)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    dt = time.monotonic() - t0
    line, note, _ = r.stdout.split(b"\n")
    assert line == b"x" * LINE_MAX + f" \u2026[cockpit cut {OUTPUT_MAX - LINE_MAX} bytes of this line]".encode()
    assert note.decode().endswith(f"{50 * MiB + 6 - OUTPUT_MAX} more bytes not kept]")
    assert peak < 16 * MiB, f"peak {peak / MiB:.1f} MiB"
    print(f"\n50 MiB line through the SSH session: {dt:.2f}s, peak {peak / MiB:.1f} MiB")
    assert tr.session.rebuilds == 0 and (await tr.run("echo next")).stdout == b"next\n"  # framing intact


async def test_a_50_mib_line_on_a_host_channel_and_a_stream_is_cut_too(tr):
    r = await tr.run_host("head -c 52428800 /dev/zero | tr '\\0' y; echo; echo last", timeout=60)
    first, last, _ = r.stdout.split(b"\n")
    assert first.startswith(b"y" * LINE_MAX) and b"[cockpit cut" in first and last == b"last"  # a channel reads all: the next line survives
    tracemalloc.start()
    try:
        lines = [line async for line in tr.stream_lines("head -c 52428800 /dev/zero | tr '\\0' z; echo; echo last", timeout=60)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print(f"\n50 MiB line through a stream: peak {peak / MiB:.1f} MiB")
    assert [len(x) for x in lines[1:]] == [5] and lines[1] == b"last\n"  # the stream sends everything: the line after survives
    assert lines[0] == b"z" * LINE_MAX + f" \u2026[cockpit cut {50 * MiB - LINE_MAX} bytes of this line]\n".encode()
    assert peak < 16 * MiB, f"peak {peak / MiB:.1f} MiB"


async def test_a_stream_whose_connection_is_cut_raises_an_ssh_error_not_asyncssh_s(tr, lab):
    # every caller of stream() (the log waker, the followers) handles RemoteError; asyncssh's own
    # ConnectionLost escaped them and ended verify with a traceback mid-attempt
    chunks = tr.stream("echo ready; sleep 30")
    assert await chunks.__anext__() == b"ready\n"
    assert faults.cut_connections(lab) >= 1
    with pytest.raises(RemoteError) as err:
        await asyncio.wait_for(chunks.__anext__(), 10)
    assert err.value.layer is Layer.SSH, err.value
    await chunks.aclose()


# -- sshd MaxSessions ----------------------------------------------------------------------------------

@pytest.fixture
def max_sessions(lab):
    """``set(n)``: sshd restarted with MaxSessions n (connections cut); 10 again afterwards."""
    yield lab.set_max_sessions
    lab.set_max_sessions(10)


async def test_max_sessions_reached_is_an_ssh_error_that_names_it_with_no_hang_and_no_leak(lab, lab_config, max_sessions):
    max_sessions(1)
    t = transport_for(lab_config())
    try:
        assert (await t.run("echo in")).ok  # the persistent session takes the only channel
        t0 = time.monotonic()
        with pytest.raises(RemoteError) as ei:
            await t.run_host("echo host")
        with pytest.raises(RemoteError):
            [c async for c in t.stream("echo stream")]
        assert time.monotonic() - t0 < 2  # refused at once, no waiting for a slot that never comes
        e = ei.value
        assert e.layer is Layer.SSH and "MaxSessions" in e.message and "sshd_config" in e.hint
        assert (await t.run("echo still")).stdout == b"still\n"  # the session is untouched
        assert t.slots.in_use == 0 and faults.channel_count(lab) == 1  # nothing leaked, either side
    finally:
        await t.close()


async def test_a_low_max_sessions_is_learned_and_commands_wait_for_a_slot(lab, lab_config, max_sessions):
    max_sessions(3)  # the session and two more
    t = transport_for(lab_config())
    try:
        assert (await t.run("echo in")).ok
        rs = await asyncio.wait_for(asyncio.gather(*[t.run_host(f"sleep 0.2; echo {i}") for i in range(8)]), 30)
        assert [r.text for r in rs] == [f"{i}\n" for i in range(8)]  # every one ran, none refused to the caller
        # learned (the session and two more: at most 2 beside it) and lowered from 7; a grant with every
        # slot open may offer one more since (sshd frees a closed channel before its close is acknowledged)
        assert t.slots.learned is not None and t.slots.learned <= 2 and t.slots.limit < t.slots.full and t.slots.in_use == 0
        assert faults.channel_count(lab) == 1
    finally:
        await t.close()


def _ps_tree(r) -> dict[int, tuple[int, str]]:
    """``ps -e -o pid=,ppid=,comm=`` as {pid: (ppid, comm)}."""
    out = {}
    for line in r.text.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            out[int(parts[0])] = (int(parts[1]), parts[2].strip())
    return out


# -- the persistent session killed from outside, 100 times ---------------------------------------------

async def test_the_session_shell_killed_100_times_is_rebuilt_by_the_next_probe_each_time(lab, lab_config, max_sessions):
    # MaxSessions 2 (the session and one more): a dead session's channel that stayed open would make
    # the next rebuild fail at once, so 100 rebuilds prove that none leaked
    max_sessions(2)
    t = transport_for(lab_config())
    try:
        assert (await t.run("echo up")).ok
        # what an earlier test of this worker's lab left running (a job's heartbeat ending late, under
        # load) is not this test's: only what appeared since, and is not theirs, is judged below
        before = _ps_tree(await t.run("ps -e -o pid=,ppid=,comm="))
        fresh = []  # the baseline, this run: a fresh session (channel, the host's login shell, pct exec, sh)
        for _ in range(3):
            await t.session.close()
            a = time.monotonic()
            await t.session.start()
            fresh.append(time.monotonic() - a)
        base = sorted(fresh)[1]
        t0 = time.monotonic()
        for i in range(100):
            shells = faults.session_shells(lab, 200)
            assert len(shells) == 1, shells
            faults.kill_session_shell(shells[0])
            assert (await t.run(f"echo {i}")).stdout == f"{i}\n".encode()  # no error: the next probe rebuilt it
        dt = time.monotonic() - t0
        print(f"\n100 session kills: {dt:.1f}s, {dt * 10:.0f} ms per kill + rebuild; a fresh session alone: {base * 1000:.0f} ms; "
              f"probes run again because the shell died before starting them: {t.session.retries}")
        assert t.session.rebuilds == 100 and t.connects == 1
        assert len(faults.session_shells(lab, 200)) == 1 and faults.channel_count(lab) == 1
        r = await t.run("ps -e -o pid=,ppid=,comm=")
        now = _ps_tree(r)
        old = {pid for pid in before if pid != 1}
        new = {pid: (ppid, comm) for pid, (ppid, comm) in now.items() if pid not in old}
        while any(ppid in old and pid in new for pid, (ppid, _) in now.items()):  # what the earlier ones started
            for pid, (ppid, _) in now.items():
                if ppid in old and pid in new:
                    del new[pid]
                    old.add(pid)
        assert sorted(c for _, c in new.values()) == ["init", "ps", "sh", "sh", "timeout"], r.text  # the session and this probe: nothing left over
        assert (await t.run_host("echo spare")).stdout == b"spare\n"  # the second channel is still free
        # no backoff or reconnect hides in the rebuilds: a second each (the reconnect backoff) would
        # be 100 s; the speed itself is measured in bench/, not asserted here (a loaded CI machine
        # made 1.5x flaky)
        assert dt < 100 * (3 * base + 0.2) + 10
    finally:
        await t.close()


# -- the network cut mid-verify ------------------------------------------------------------------------

def counting_job(lab, **verify):
    """Config overrides for a job that appends a line to ``launches`` each time it is launched."""
    ws = lab.workspace()
    launches = ws / "launches"
    launches.unlink(missing_ok=True)
    for old in ws.glob("train-*.log"):  # every test's journal starts at attempt 1: an older log would look like this one
        old.unlink()
    cmd = f"echo launched >> {launches}; exec {lab.jobsim_command('--steps', 0, '--interval', 0.1)}"
    return launches, {"job": {"command": cmd}, "verify": {"settle": 4.0, **verify}}


def launched(launches: Path) -> int:
    return launches.read_text().count("launched") if launches.exists() else 0


def progressing(lab) -> bool:
    """The job of the current attempt is logging steps (so verify is in its settle window)."""
    logs = sorted(lab.workspace().glob("train-*.log"), key=lambda p: p.stat().st_mtime)
    return bool(logs) and "step 2 " in logs[-1].read_text(errors="replace")


class Watcher:
    """The engine's events with the time each came."""

    def __init__(self, eng) -> None:
        self.events: list[tuple[float, object]] = []
        eng.subscribe(lambda ev: self.events.append((time.monotonic(), ev)))

    def ssh_waits(self, since: float = 0.0) -> list[tuple[float, str]]:
        """Running stages in the ssh layer (what the verdict strip shows while reconnecting)."""
        return [(t, ev.stage.detail) for t, ev in self.events if isinstance(ev, StageProgress) and t >= since
                and ev.stage.status is Status.RUNNING and ev.stage.layer is Layer.SSH]


async def _attempt_until_progress(lab, eng):
    task = asyncio.ensure_future(eng.attempt("network cut under verify", follow=False))
    await await_for(lambda: progressing(lab) or task.done(), 30, "the job never logged two steps")
    assert not task.done(), task.result().verdict.summary()
    return task


async def test_connection_killed_by_the_server_mid_verify_is_shown_and_verify_reattaches(lab, lab_config, engines):
    launches, over = counting_job(lab)
    eng = engines(lab_config(**over))
    w = Watcher(eng)
    task = await _attempt_until_progress(lab, eng)
    t_cut = time.monotonic()
    assert faults.cut_connections(lab) >= 1
    res = await asyncio.wait_for(task, 30)
    waits = w.ssh_waits(t_cut)
    assert waits and "lost the connection" in waits[0][1] and waits[0][0] - t_cut < 2, waits  # shown at once, in the ssh layer
    assert any("re-attached after" in d for _, d in waits)
    print(f"\nconnection reset: shown after {waits[0][0] - t_cut:.2f}s; {waits[-1][1]}")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()  # judged on the job, not on the network
    alive = next(s for s in res.verdict.stages if s.name == "verify: alive")
    assert "lost the connection" in alive.detail and "re-attached" in alive.detail
    assert eng.transport.connects == 2 and launched(launches) == 1  # reconnected once; launched once


async def test_a_frozen_link_is_noticed_within_the_keepalive_window_and_verify_reattaches(lab, lab_config, engines):
    launches, over = counting_job(lab)
    eng = engines(lab_config(ssh={"keepalive_interval": 1}, **over))
    w = Watcher(eng)
    task = await _attempt_until_progress(lab, eng)
    frozen = faults.connections(lab)
    for pid in frozen:  # the peer stops answering and nothing closes the TCP connection: a dead link
        os.kill(pid, signal.SIGSTOP)
    t_cut = time.monotonic()
    try:
        res = await asyncio.wait_for(task, 40)
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGKILL)
    waits = w.ssh_waits(t_cut)
    print(f"\nfrozen link: shown after {waits[0][0] - t_cut:.2f}s; {waits[-1][1]}")
    assert waits and waits[0][0] - t_cut <= 1 * (3 + 1) + 2, waits  # a keepalive after 1 s of silence, 3 missed answers, a margin
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert launched(launches) == 1


async def test_sshd_down_mid_verify_ends_the_attempt_interrupted_and_the_job_stays_stoppable(lab, lab_config, engines, tmp_path):
    launches, over = counting_job(lab)
    cfg = lab_config(ssh={"reconnect_for": 2}, **over)
    eng = engines(cfg)
    w = Watcher(eng)
    task = await _attempt_until_progress(lab, eng)
    t_cut = time.monotonic()
    lab.stop()  # sshd and its connections gone; the container and the job run on
    try:
        res = await asyncio.wait_for(task, 30)
        waits = w.ssh_waits(t_cut)
        assert len(waits) >= 3 and "refused" in waits[-1][1], waits  # tried again, with backoff, saying why each time
        assert res.outcome is Outcome.INTERRUPTED and res.verdict.layer is Layer.SSH, res.verdict.summary()
        assert "could not reconnect within 2s" in res.verdict.failed_stage.detail
        rec = eng.journal.get(res.attempt)
        assert getattr(rec.outcome, "value", rec.outcome) == "interrupted"  # never "failed", never "untested"
    finally:
        lab.start()
    st = run_cli("status", "--json", "--config", str(tmp_path / "cockpit.toml"))
    assert st.stdout.startswith("{"), st.stdout + st.stderr
    la = json.loads(st.stdout)["latest_attempt"]
    assert la["attempt"] == res.attempt and la["outcome"] == "interrupted" and la["fate"]["state"] == "running", la
    stop = run_cli("stop", "--json", "--config", str(tmp_path / "cockpit.toml"))
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert lab.exec_in(200, f"kill -0 {res.job.pid}").returncode != 0  # stopped
    assert launched(launches) == 1


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cockpit", *args], capture_output=True, text=True, timeout=timeout)


# -- cockpit itself killed mid-attempt -----------------------------------------------------------------

def journal_lines(cfg) -> list[dict]:
    """Every journal line parsed: an exception here is a journal a crash left unreadable."""
    text = cfg.journal_path.read_text()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def _headless_attempt(lab, tmp_path, **popen):
    return subprocess.Popen([sys.executable, "-m", "cockpit", "attempt", "--note", "killed under me", "--config",
                             str(tmp_path / "cockpit.toml")], **popen)


def _after_the_kill(lab, cfg, tmp_path, launches, expect_outcome):
    journal_lines(cfg)  # intact: every line valid JSON
    st = run_cli("status", "--json", "--config", str(tmp_path / "cockpit.toml"))
    la = json.loads(st.stdout)["latest_attempt"]
    assert la["outcome"] == expect_outcome and la["fate"]["state"] == "running", la  # reconciled: the job runs on
    stop = run_cli("stop", "--json", "--config", str(tmp_path / "cockpit.toml"))
    assert stop.returncode == 0, stop.stdout + stop.stderr
    job = next(e for e in journal_lines(cfg) if e.get("event") == "job")
    assert lab.exec_in(200, f"kill -0 {int(job['pid'])}").returncode != 0  # the recorded job was stopped by cockpit stop
    assert launched(launches) == 1


def test_kill_9_of_a_headless_attempt_during_verify_loses_nothing(lab, lab_config, tmp_path):
    launches, over = counting_job(lab)
    cfg = lab_config(**over)
    proc = _headless_attempt(lab, tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: progressing(lab) or proc.poll() is not None, 30, "the job never logged two steps")
        assert proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    _after_the_kill(lab, cfg, tmp_path, launches, "interrupted")


def test_the_terminal_closed_under_a_headless_attempt_ends_it_interrupted(lab, lab_config, tmp_path):
    import pty

    launches, over = counting_job(lab)
    cfg = lab_config(**over)
    master, slave = pty.openpty()
    # setsid -c: cockpit leads a session whose controlling terminal is this pty, as in a terminal window
    proc = subprocess.Popen(["setsid", "-c", sys.executable, "-m", "cockpit", "attempt", "--note", "terminal closed",
                             "--config", str(tmp_path / "cockpit.toml")], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)

    def drain(fd: int) -> None:  # a terminal reads what cockpit draws; a full pty buffer would block its writes
        with contextlib.suppress(OSError):
            while os.read(fd, 65536):
                pass

    reader = threading.Thread(target=drain, args=(master,), daemon=True)
    reader.start()
    try:
        wait_for(lambda: progressing(lab) or proc.poll() is not None, 30, "the job never logged two steps")
        assert proc.poll() is None
        os.close(master)  # the terminal window closes: the kernel sends SIGHUP to cockpit
        master = -1
        code = proc.wait(20)
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
        reader.join(5)
    assert code == 130, code  # ended as interrupted, not killed by the signal
    events = [e.get("event") for e in journal_lines(cfg)]
    ends = [e for e in journal_lines(cfg) if e.get("event") == "attempt_finished"]
    assert ends and ends[-1]["outcome"] == "interrupted" and "attempt_interrupted" not in events  # closed by cockpit on its way out
    _after_the_kill(lab, cfg, tmp_path, launches, "interrupted")


# -- the container rebooted behind cockpit's back, mid-verify ----------------------------------------------
# (after the verdict: tests/test_verdict_truth.py::test_fate_vanished_when_the_container_is_rebooted_under_the_job)

async def test_a_container_rebooted_mid_verify_is_a_host_fault_not_a_failure_of_the_code(lab, lab_config, engines):
    launches, over = counting_job(lab)
    eng = engines(lab_config(**over))
    task = await _attempt_until_progress(lab, eng)
    assert lab.pct("reboot", 200).returncode == 0  # not by cockpit
    res = await asyncio.wait_for(task, 30)
    fs = res.verdict.failed_stage
    assert res.outcome is Outcome.UNTESTED and fs is not None and fs.layer is Layer.HOST, res.verdict.summary()
    assert "restarted" in fs.detail or "rebooted" in fs.detail, fs.detail
    assert launched(launches) == 1


async def test_a_link_cut_and_rebuilt_by_another_reading_between_two_of_verifys_is_said(lab, lab_config, engines):
    # the GPUs read beside the settle window, or the observer's probes on the same link, may be the
    # reading that meets the cut and reconnects: verify's next reading rides the rebuilt link, and
    # its verdict must still say the connection was lost, not read as if it had held
    cfg = lab_config(job={"command": lab.jobsim_command("--steps", 0, "--interval", 0.1)})
    eng = engines(cfg)
    ctx = ActionContext(cfg, eng.transport)
    v, rec = await launch(ctx, 1)
    assert v.ok and rec is not None, v.summary()
    reader = reader_for(ctx, rec)
    reader.connects = eng.transport.connects  # as verify keeps it
    vb, notes = VerdictBuilder(ctx, "verify", VERIFY_PLAN), []
    assert (await read_job(ctx, reader, vb, notes)).alive and notes == []
    assert faults.cut_connections(lab) >= 1
    await await_for(lambda: not eng.transport.connected, 10, "the client noticing the cut")
    await eng.transport.connect()  # another reading on the link rebuilds it
    assert (await read_job(ctx, reader, vb, notes)).alive
    assert len(notes) == 1 and "lost the connection" in notes[0] and "re-attached after" in notes[0], notes
    assert (await read_job(ctx, reader, vb, notes)).alive and len(notes) == 1  # said once
    assert (await stop(ctx, rec)).ok
