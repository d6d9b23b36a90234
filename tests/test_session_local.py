"""The framed session over a local shell: framing, timeouts, concurrency, death and rebuild."""

import asyncio
import os
import signal

import pytest

from cockpit.core.layers import Layer
from cockpit.core.remote.base import RemoteError
from cockpit.core.remote.local import LocalTransport
from cockpit.core.runtimes import HostRuntime
from tests.lab.util import await_for


@pytest.fixture
async def t():
    tr = LocalTransport(HostRuntime())
    yield tr
    await tr.close()


async def test_no_trailing_newline_stderr_and_exit_code(t):
    r = await t.run("printf 'a\\nb'; printf 'warn' >&2; exit 3")
    assert (r.stdout, r.stderr, r.exit_code) == (b"a\nb", b"warn", 3)


async def test_output_containing_the_frame_header_is_intact(t):
    r = await t.run("printf '@@cockpit 1 0 0 0\\n@@cockpit 2 0 5 5\\n'; printf '@@cockpit-ready' >&2")
    assert r.stdout == b"@@cockpit 1 0 0 0\n@@cockpit 2 0 5 5\n" and r.stderr == b"@@cockpit-ready"
    assert (await t.run("echo next")).stdout == b"next\n"


async def test_binary_output_round_trips(t, tmp_path):
    blob = bytes(range(256)) * 64 + b"\x00\xff\n@@cockpit 9 9 9 9\n"
    (tmp_path / "blob").write_bytes(blob)
    r = await t.run(f"cat {tmp_path}/blob")
    assert r.stdout == blob


async def test_huge_output(t):
    r = await t.run("yes 0123456789abcdef | head -c 8000000")
    assert r.stdout == (b"0123456789abcdef\n" * 470589)[:8_000_000]  # many lines: all of it, byte for byte


async def test_a_50_mib_line_is_cut_with_a_mark_in_bounded_memory(t):
    """A command printing 50 MiB without a newline: the line's first LINE_MAX bytes, a mark, no
    exception, memory bounded (not 50 MiB), and the next command runs on the same session."""
    import time
    import tracemalloc

    from cockpit.core.remote.lines import LINE_MAX, OUTPUT_MAX

    tracemalloc.start()
    t0 = time.monotonic()
    try:
        r = await t.run("echo first; head -c 52428800 /dev/zero | tr '\\0' x; echo; echo last", timeout=60)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    dt = time.monotonic() - t0
    first, line, *rest = r.stdout.split(b"\n")
    assert first == b"first" and line.startswith(b"x" * LINE_MAX)
    # of the 32 MiB sent (OUTPUT_MAX: the rest is never sent), all but LINE_MAX bytes were cut, and the end says so
    assert line[LINE_MAX:].decode() == f" \u2026[cockpit cut {OUTPUT_MAX - 6 - LINE_MAX} bytes of this line]"
    assert rest[0].decode().endswith(f"{50 * 2**20 + 12 - OUTPUT_MAX} more bytes not kept]")
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    print(f"\n50 MiB line through the local session: {dt:.2f}s, peak {peak / 2**20:.1f} MiB")
    assert t.session.rebuilds == 0 and (await t.run("echo next")).stdout == b"next\n"
    r = await t.run("head -c 5000000 /dev/zero | tr '\\0' y; echo; echo after")  # the line after a cut one survives
    assert r.stdout.endswith(f"y \u2026[cockpit cut {5000000 - LINE_MAX} bytes of this line]\nafter\n".encode())


async def test_timeout_kills_command_and_session_survives(t, tmp_path):
    marker = tmp_path / "child.pid"
    r = await t.run(f"sleep 30 & echo $! > {marker}; wait", timeout=0.5)
    assert r.timed_out and r.exit_code in (124, 137)
    pid = int(marker.read_text())
    # the whole process group was killed: the backgrounded sleep is gone too
    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    await await_for(gone, timeout=2, message="the timed-out command's child survived")
    assert (await t.run("echo alive")).stdout == b"alive\n"


async def test_fifty_concurrent_probes_come_back_to_their_callers(t):
    rs = await asyncio.gather(*[t.run(f"echo {i}; exit {i % 7}") for i in range(50)])
    assert [r.stdout for r in rs] == [f"{i}\n".encode() for i in range(50)]
    assert [r.exit_code for r in rs] == [i % 7 for i in range(50)]


async def test_commands_do_not_read_the_session_stdin(t):
    r = await t.run("cat; echo done")
    assert r.stdout == b"done\n"
    assert (await t.run("echo ok")).stdout == b"ok\n"


async def test_session_killed_from_outside_is_reported_and_rebuilt(t):
    await t.run("true")
    pid = t.session._proc.pid
    os.killpg(pid, signal.SIGKILL)
    # the death is noticed (an error naming its layer, or a transparent rebuild), never a hang
    try:
        r = await t.run("echo back")
    except RemoteError as e:
        assert e.layer in (Layer.HOST, Layer.CONTAINER)
        r = await t.run("echo back")
    assert r.stdout == b"back\n"
    assert t.session.rebuilds >= 1 and t.session.last_error is not None


async def test_exit_and_exec_in_a_command_do_not_end_the_session(t):
    assert (await t.run("exit 4")).exit_code == 4
    assert (await t.run("exec echo replaced")).stdout == b"replaced\n"
    assert (await t.run("echo ok")).stdout == b"ok\n"
    assert t.session.rebuilds == 0


async def test_stream_yields_output_then_ends(t):
    chunks = [c async for c in t.stream("printf 'one\\n'; printf 'two\\n'")]
    assert b"".join(chunks) == b"one\ntwo\n"


async def test_stream_closed_early_kills_the_command(t):
    it = t.stream("echo $$; exec sleep 30")
    pid = int((await it.__anext__()).split()[0])
    await it.aclose()

    def gone() -> bool:  # reaped, or a zombie waiting for its new parent to reap it
        try:
            with open(f"/proc/{pid}/stat") as fh:
                return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    await await_for(gone, timeout=5, message="the streamed command to be killed")


async def test_stream_timeout_bounds_the_whole_stream(t):
    with pytest.raises(asyncio.TimeoutError):
        async for _ in t.stream("echo start; sleep 5", timeout=0.3):
            pass
