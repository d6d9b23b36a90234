"""Connect's host stage (``pct status``) is asked in the host's persistent shell, not on a new SSH
channel each action; its verdicts read as they did on a channel of its own."""

from __future__ import annotations

import os
import signal

from cockpit.core.layers import Layer, Status
from tests.lab.util import await_for


def _spy(eng) -> list[str]:
    sent: list[str] = []
    real = eng.transport.run_host

    async def run_host(cmd: str, **kw):
        sent.append(cmd)
        return await real(cmd, **kw)

    eng.transport.run_host = run_host  # type: ignore[method-assign]
    return sent


def _host(v):
    return next(s for s in v.stages if s.name.endswith("host answers"))


async def _warm(eng) -> None:
    """The first action asks on a channel of its own and starts the host's shell meanwhile."""
    assert _host(await eng.run_action("stop")).status is Status.OK
    await await_for(lambda: eng.observer.host.ready, 20, "the host's shell to start")


async def test_pct_status_rides_the_host_shell(lab, lab_config, engines):
    eng = engines(lab_config())
    sent = _spy(eng)
    await _warm(eng)
    assert [c for c in sent if "pct status" in c]  # cold: its own channel (cheaper than starting a shell first)
    sent.clear()
    for _ in range(2):
        v = await eng.run_action("stop")
        host = _host(v)
        assert host.status is Status.OK and host.detail == "container 200 is running", host
    assert not [c for c in sent if "pct status" in c]  # warm: no channel of its own for it
    assert eng.observer.host.ready


async def test_a_stopped_container_reads_as_host_through_the_host_shell(lab, lab_config, engines):
    eng = engines(lab_config())
    await _warm(eng)
    lab.pct("stop", 200, check=True)
    v = await eng.run_action("stop")
    host = _host(v)
    assert (host.status, host.layer, host.detail) == (Status.FAIL, Layer.HOST, "container 200 is stopped")
    assert v.layer is Layer.HOST
    assert [s.status for s in v.stages if s.name.endswith(("target shell answers", "workdir exists"))] == [Status.NOT_REACHED] * 2


async def test_a_killed_host_shell_is_not_a_failure(lab, lab_config, engines):
    eng = engines(lab_config())
    await _warm(eng)
    session = eng.observer.host.session
    assert session is not None and session.shell_pid is not None
    os.kill(session.shell_pid, signal.SIGKILL)  # the host's shell itself dies, the connection stays
    v = await eng.run_action("stop")
    host = _host(v)
    assert (host.status, host.detail) == (Status.OK, "container 200 is running"), host
    assert v.failed_stage is None
