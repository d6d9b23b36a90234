"""The host kernel log as one long-lived `dmesg --follow` against the lab: a refresh runs nothing
remotely, a new OOM kill shows without a poll, a killed stream is shown and restarted, and a host
whose dmesg cannot follow is polled (the mode says which)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from cockpit.core.engine import Engine
from tests.lab.util import await_for, pids_where

pytestmark = pytest.mark.lab

OOM = "Memory cgroup out of memory: Killed process {pid} (python3) total-vm:1000kB, anon-rss:900kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:10kB oom_score_adj:0"


def _followers(lab) -> list[int]:
    """Pids of this lab's dmesg emulator running with --follow (started by this test's cockpit; another
    test worker's lab has its own, in its own directory)."""
    mine = str(lab.dir).encode()
    return pids_where(lambda argv: any(a.endswith(b"/dmesg") and a.startswith(mine) for a in argv) and b"--follow" in argv)


async def test_the_kernel_log_follows_one_stream_and_a_refresh_runs_nothing(lab, lab_config):
    lab.add_kernel_message("Linux version 6.8.12-pve (build@proxmox)")
    eng = Engine(lab_config())
    obs = eng.observer
    try:
        first = await obs.refresh_kmsg()
        assert first.error is None and first.mode == "poll"  # the stream is starting: this one polls
        await await_for(lambda: obs.streams.kmsg is not None and obs.streams.kmsg.ready, 15, "the stream up")
        calls = []
        real = eng.transport.run_host

        async def counted(*a, **kw):
            calls.append(a)
            return await real(*a, **kw)

        eng.transport.run_host = counted  # type: ignore[method-assign]
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            v = await obs.refresh_kmsg()
            times.append(time.perf_counter() - t0)
        assert v.mode == "follow" and not calls, calls
        assert obs.to_dict()["streams"]["kernel"] == {"mode": "stream", "why": ""}  # named as the part is, not "kmsg"
        lab.add_kernel_message(OOM.format(pid=4242) + "\n" + "oom_reaper: reaped process 4242 (python3)".split("\n")[0])

        async def oom_seen() -> bool:
            v = await obs.refresh_kmsg()
            return any("4242" in f.summary for f in v.findings)

        await await_for(oom_seen, 10, "the OOM kill through the stream")
        assert not calls and obs.kmsg.to_dict()["mode"] == "follow"
        times.sort()
        print(f"\nkernel-log refresh while following: median {times[len(times) // 2] * 1000:.2f} ms, no remote command")
    finally:
        await eng.close()
    await await_for(lambda: not _followers(lab), 10, "the stream closed with the engine")


async def test_a_killed_stream_is_shown_and_restarted(lab, lab_config):
    lab.add_kernel_message("Linux version 6.8.12-pve (build@proxmox)")
    eng = Engine(lab_config())
    obs = eng.observer
    try:
        await obs.refresh_kmsg()
        await await_for(lambda: obs.streams.kmsg is not None and obs.streams.kmsg.ready and _followers(lab), 15, "the stream up")
        fol = obs.streams.kmsg
        for pid in _followers(lab):
            os.kill(pid, signal.SIGKILL)
        await await_for(lambda: fol.state == "restarting", 10, "the death noticed")
        v = await obs.refresh_kmsg()
        assert v.mode == "poll" and v.follow_error and v.to_dict()["follow_error_layer"] == "host", v.to_dict()
        await await_for(lambda: fol.ready and fol.starts == 2, 15, "restarted after its backoff")
        assert (await obs.refresh_kmsg()).mode == "follow"
    finally:
        await eng.close()


async def test_a_dmesg_that_cannot_follow_is_polled(lab, lab_config, tmp_path):
    """busybox dmesg knows no --follow: the stream ends with nothing; polling it is, said once."""
    eng = Engine(lab_config())
    obs = eng.observer
    from cockpit.core.probes.kmsg.follow import KmsgFollower, follow_command

    fake = tmp_path / "dmesg"
    fake.write_text("#!/bin/sh\necho 'dmesg: unrecognized option --follow' >&2; exit 1\n")
    fake.chmod(0o755)
    lab.add_kernel_message("Linux version 6.8.12-pve (build@proxmox)")
    try:
        obs.streams.kmsg = KmsgFollower(lambda c: _lines(eng, c),
                                        command=follow_command(str(fake)))
        obs.streams.kmsg.start()
        await await_for(lambda: obs.streams.kmsg.state == "unsupported", 15, "following given up")
        v = await obs.refresh_kmsg()
        assert v.mode == "poll" and v.error is None and v.follow_error
    finally:
        await eng.close()


async def test_a_dmesg_killed_before_its_first_line_is_restarted_not_given_up(lab, lab_config, tmp_path):
    """On a loaded host the stream can be up (its header read) and dmesg killed before it printed
    one kernel line: that is a death to restart from, not a dmesg that cannot follow.  Only a
    failure exit status (busybox, no permission) gives following up.  The first stream runs under
    a POSIX ``sh`` (dash), which gives background lists /dev/null as stdin."""
    import shlex

    from cockpit.core.probes.kmsg.follow import KmsgFollower, follow_command

    killed = tmp_path / "dmesg-killed"
    killed.write_text("#!/bin/sh\nkill -9 $$\n")
    failing = tmp_path / "dmesg-failing"
    failing.write_text("#!/bin/sh\necho 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1\n")
    for f in (killed, failing):
        f.chmod(0o755)
    eng = Engine(lab_config())
    fol = KmsgFollower(lambda c: _lines(eng, c), command="sh -c " + shlex.quote(follow_command(str(killed))))
    gave_up = KmsgFollower(lambda c: _lines(eng, c), command=follow_command(str(failing)))
    try:
        fol.start()
        await await_for(lambda: fol.deaths >= 1, 15, "the killed dmesg noticed")
        assert fol.state == "restarting" and "exit status 137" in (fol.last_death or ""), (fol.state, fol.last_death)
        gave_up.start()
        await await_for(lambda: gave_up.state == "unsupported", 15, "following given up")
        assert "exit status 1)" in (gave_up.last_death or ""), gave_up.last_death
    finally:
        await fol.close()
        await gave_up.close()
        await eng.close()


def _lines(eng, cmd):
    from cockpit.core.remote.lines import capped_lines

    return capped_lines(eng.transport.stream_host(cmd))
