"""A caller that goes (cancelled) while its SSH channel opens leaves nothing taken, against the lab's sshd.

Every channel beside the persistent session takes one of the transport's slots
(:mod:`cockpit.core.remote.channels`).  Under load, a stream is often closed (the limit fell under
what it needs), or a command's deadline passes, while its channel's open is on the wire: sshd's
answer then comes for a caller that is gone.  A slot it kept would never be given back and a
refusal nobody learned from would never make the host's shell give way: the next command waits for
ever (a MaxSessions-2 test hung so under four workers).  Each test forces that interleaving
(the caller is cancelled right after its open request went out, or as its shell starts) and checks
both sides: cockpit's slots and sshd's channels.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cockpit.core.remote.hostsession import HostSession
from cockpit.core.runtimes import transport_for
from tests.lab import faults
from tests.lab.util import await_for

pytestmark = pytest.mark.lab


@pytest.fixture
def max_sessions(lab):
    yield lab.set_max_sessions
    lab.set_max_sessions(10)


@contextlib.contextmanager
def cancel_as_it_opens(conn: Any, victim: Callable[[], asyncio.Future[Any] | None], *, after_open: bool = False) -> Iterator[list[int]]:
    """Every channel opened on ``conn`` cancels ``victim()``, the task that wants it: as soon as its
    request went out (sshd's answer still to come), or once sshd granted it (``after_open``).
    Yields the list of opens seen."""
    real = conn.create_process
    opens: list[int] = []

    def cancel() -> None:
        task = victim()
        assert task is not None
        task.cancel()

    async def granted_then_cancel(*args: Any, **kw: Any) -> Any:
        proc = await real(*args, **kw)
        cancel()
        return proc

    def create_process(*args: Any, **kw: Any) -> Any:
        opens.append(1)
        if after_open:
            return granted_then_cancel(*args, **kw)
        cancel()  # lands at the open's first wait: its request is sent by then
        return real(*args, **kw)

    conn.create_process = create_process
    try:
        yield opens
    finally:
        del conn.create_process


async def settled(t: Any, lab: Any, in_use: int, channels: int) -> None:
    """Cockpit's slots and sshd's channels (the session's included) come to these counts."""
    await await_for(lambda: t.slots.in_use == in_use and faults.channel_count(lab) == channels, 15,
                    message=lambda: f"slots in use {t.slots.in_use} (want {in_use}), sshd channels {faults.channel_count(lab)} (want {channels})")


async def test_a_command_cancelled_while_sshd_refuses_its_channel_gives_its_slot_back_and_the_refusal_counts(lab, lab_config, max_sessions):
    max_sessions(2)  # the session and one more
    t = transport_for(lab_config())
    held = t.stream_host("echo up; exec cat")  # the one more, held open
    try:
        assert (await t.run("echo in")).ok
        assert await held.__anext__() == b"up\n"
        assert t.slots.in_use == 1 and t.slots.learned is None
        task: asyncio.Future[Any] | None = None
        with cancel_as_it_opens(await t.connect(), lambda: task) as opens:
            task = asyncio.ensure_future(t.run_host("echo never"))
            with pytest.raises(asyncio.CancelledError):
                await task
        assert opens == [1]
        # sshd's refusal, answered to nobody, still taught the limit, and the slot is free again
        await await_for(lambda: t.slots.learned == 1 and t.slots.limit == 1 and t.slots.in_use == 1, 15,
                        message=lambda: f"learned {t.slots.learned}, limit {t.slots.limit}, in use {t.slots.in_use}")
        await held.aclose()
        assert (await asyncio.wait_for(t.run_host("echo after"), 20)).stdout == b"after\n"  # no wait for ever
        await settled(t, lab, 0, 1)
    finally:
        await held.aclose()
        await t.close()


@pytest.mark.parametrize("after_open", [False, True], ids=["request-sent", "granted"])
async def test_a_stream_cancelled_while_its_channel_opens_closes_the_channel_sshd_grants(lab, lab_config, after_open):
    t = transport_for(lab_config())
    try:
        assert (await t.run("echo in")).ok
        task: asyncio.Future[Any] | None = None

        async def follow() -> list[bytes]:
            return [c async for c in t.stream_host("echo up; exec cat")]

        with cancel_as_it_opens(await t.connect(), lambda: task, after_open=after_open):
            task = asyncio.ensure_future(follow())
            with pytest.raises(asyncio.CancelledError):
                await task
        await settled(t, lab, 0, 1)  # granted to nobody: closed, its slot given back
        assert (await t.run_host("echo after")).stdout == b"after\n"
    finally:
        await t.close()


def host_session(t: Any) -> HostSession:
    hs = HostSession(t)
    hs.persistent = True  # kept for a container's host; the lab's plain host shows the same channel
    return hs


async def test_the_host_shell_cancelled_while_its_channel_opens_leaves_no_channel_and_no_slot(lab, lab_config):
    t = transport_for(lab_config())
    hs = host_session(t)
    try:
        assert (await t.run("echo in")).ok
        task: asyncio.Future[Any] | None = None
        with cancel_as_it_opens(await t.connect(), lambda: task):
            task = asyncio.ensure_future(hs.run("echo host"))
            with pytest.raises(asyncio.CancelledError):
                await task
        await settled(t, lab, 0, 1)
        assert (await hs.run("echo again")).stdout == b"again\n"  # a new shell, in the slot given back
        assert hs.ready and t.slots.in_use == 1
    finally:
        await hs.close()
        await t.close()


async def test_the_host_shell_cancelled_as_it_starts_closes_its_channel(lab, lab_config):
    """``start_soon``'s task cancelled (the host session closed) while the new shell bootstraps."""
    t = transport_for(lab_config())
    hs = host_session(t)
    real = hs._spawn

    async def spawn() -> Any:
        shell = await real()
        task = asyncio.current_task()
        assert task is not None
        task.cancel()  # cancelled as the shell's bootstrap begins
        return shell

    hs._spawn = spawn  # type: ignore[method-assign]
    try:
        assert (await t.run("echo in")).ok
        with pytest.raises(asyncio.CancelledError):
            await hs.run("echo host")
        await settled(t, lab, 0, 1)
    finally:
        await hs.close()
        await t.close()


async def test_the_host_shell_closed_while_its_channel_opens_is_not_kept(lab, lab_config):
    """The host session closed (its caller goes on) while a shell's channel opens: that shell is
    closed, the command runs on a channel of its own, and nothing holds a slot afterwards."""
    t = transport_for(lab_config())
    hs = host_session(t)
    closing: list[asyncio.Future[None]] = []
    try:
        assert (await t.run("echo in")).ok
        conn = await t.connect()
        real = conn.create_process

        def create_process(*args: Any, **kw: Any) -> Any:
            if not closing:
                closing.append(asyncio.ensure_future(hs.close()))
            return real(*args, **kw)

        conn.create_process = create_process
        try:
            r = await hs.run("echo host")
        finally:
            del conn.create_process
        assert r.stdout == b"host\n" and closing and closing[0].done()
        assert hs.session is None or not hs.ready
        await settled(t, lab, 0, 1)
    finally:
        await hs.close()
        await t.close()


async def test_a_host_shell_still_starting_when_its_session_closes_is_over_when_close_returns(lab, lab_config):
    # `cockpit verify` started the host's shell in the background (start_soon) and ended before it was
    # up: the close cut the start short, and the start, left pending, ended with the closed session's
    # RemoteError at the event loop's shutdown ("unhandled exception during asyncio.run() shutdown")
    t = transport_for(lab_config())
    hs = host_session(t)
    try:
        assert (await t.run("echo in")).ok
        hs.start_soon()
        starting = hs._starting
        assert starting is not None
        await asyncio.sleep(0)  # one turn of the loop: the start is under way (its channel's open on the wire)
        await hs.close()
        assert starting.done(), "the start outlived the close: the loop's shutdown would meet it"
    finally:
        await hs.close()
        await t.close()
