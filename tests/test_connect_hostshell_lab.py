"""Connect's host stage: a container whose shell answers is running, and no ``pct status`` is run
for it (a Perl program on a Proxmox host, 0.3-0.5 s each action); when the shell does not answer,
``pct status`` names why, asked in the host's persistent shell once that is up (not on a new SSH
channel each action), and its verdicts read as they did on a channel of its own."""

from __future__ import annotations

import os
import signal

from cockpit.core.layers import Layer, Status
from tests.lab.util import await_for


def _spy(eng) -> list[str]:
    """Every command sent to the host, on a channel of its own or through the host's shell."""
    sent: list[str] = []
    real, shell = eng.transport.run_host, eng.observer.host.run

    async def run_host(cmd: str, **kw):
        sent.append(cmd)
        return await real(cmd, **kw)

    async def in_shell(cmd: str, **kw):
        sent.append(cmd)
        return await shell(cmd, **kw)

    eng.transport.run_host = run_host  # type: ignore[method-assign]
    eng.observer.host.run = in_shell  # type: ignore[method-assign]
    return sent


def _host(v):
    return next(s for s in v.stages if s.name.endswith("host answers"))


async def _warm(eng) -> None:
    """The first action asks on a channel of its own and starts the host's shell meanwhile."""
    assert _host(await eng.run_action("stop")).status is Status.OK
    await await_for(lambda: eng.observer.host.ready, 20, "the host's shell to start")


async def test_a_running_container_is_told_by_its_shell_without_pct_status(lab, lab_config, engines):
    eng = engines(lab_config())
    sent = _spy(eng)
    await _warm(eng)  # cold: a new connection, the session started
    for _ in range(2):  # warm
        v = await eng.run_action("stop")
        host = _host(v)
        assert (host.status, host.detail) == (Status.OK, "container 200 is running (its shell answers)"), host
    assert not [c for c in sent if "pct status" in c], sent
    assert eng.observer.host.ready  # started meanwhile, for the host's own questions


async def test_pct_status_names_why_the_shell_did_not_answer(lab, lab_config, engines):
    eng = engines(lab_config())
    await _warm(eng)
    sent = _spy(eng)
    lab.pct("stop", 200, check=True)
    try:
        v = await eng.run_action("stop")
    finally:
        lab.pct("start", 200, check=True)
    assert (_host(v).status, _host(v).detail) == (Status.FAIL, "container 200 is stopped")
    asked = [c for c in sent if "pct status" in c]
    assert len(asked) == 1, sent
    # the container runs again: its shell answers, pct status is not asked
    sent.clear()
    again = await eng.run_action("stop")
    assert _host(again).status is Status.OK and not [c for c in sent if "pct status" in c], sent


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
    assert (host.status, host.detail) == (Status.OK, "container 200 is running (its shell answers)"), host
    assert v.failed_stage is None
