"""The framed session's light modes and pipelining, over a local shell: ``inline=True`` (the command
runs in the session shell itself, no fork), ``run_many`` (several frames in one write, answers in
order), and the guarantees both keep: exact framing, exit codes, stderr, deadlines, retry rules."""

from __future__ import annotations

import time

import pytest

from cockpit.core.remote.base import RemoteError
from cockpit.core.remote.frames import INLINE_MAX
from cockpit.core.remote.local import LocalTransport
from cockpit.core.runtimes import HostRuntime


@pytest.fixture
async def t():
    tr = LocalTransport(HostRuntime())
    yield tr
    await tr.close()


CASES = [
    ("printf 'a\\nb'; printf 'warn' >&2; exit 3", b"a\nb", b"warn", 3),
    ("printf 'x\\n\\n\\n'", b"x\n\n\n", b"", 0),
    ("printf '@@cockpit 1 0 0 0\\n@@cockpit-go 9\\n@@cockpit 9 0 5 5'", b"@@cockpit 1 0 0 0\n@@cockpit-go 9\n@@cockpit 9 0 5 5", b"", 0),
    ("printf '  lead\\\\and\\\\\\\\back  \\n\\ttab'", b"  lead\\and\\\\back  \n\ttab", b"", 0),
    ("printf 'h\\303\\251llo \\001\\377\\342\\202\\254\\n'", b"h\xc3\xa9llo \x01\xff\xe2\x82\xac\n", b"", 0),
    ("printf 'e1\\n\\ne2' >&2; return 7", b"", b"e1\n\ne2", 7),
    ("kill -0 $$", b"", b"", 0),
    ("read -r u _ </proc/uptime; [ -n \"$u\" ] && echo up", b"up\n", b"", 0),
]


@pytest.mark.parametrize("cmd, out, err, code", CASES)
async def test_an_inline_command_is_framed_exactly(t, cmd, out, err, code):
    r = await t.session.run(cmd, inline=True)
    assert (r.stdout, r.stderr, r.exit_code) == (out, err, code)
    assert (await t.run(cmd.replace("return", "exit"))).stdout == out  # the watched path agrees


async def test_where_the_shell_counts_characters_inline_falls_back_to_a_subshell_and_stays_exact(t):
    await t.session.start()
    t.session.bytes_len = False  # as bash in a UTF-8 locale says at bootstrap
    for cmd, out, err, code in CASES:
        r = await t.session.run(cmd, inline=True)
        assert (r.stdout, r.stderr, r.exit_code) == (out, err, code), cmd
    r = await t.session.run("read -r p _ </proc/self/stat; echo $p", inline=True)
    assert int(r.text) != t.session.shell_pid  # a subshell, not the shell itself


async def test_an_inline_command_runs_in_the_session_shell_itself_and_exit_does_not_end_it(t):
    await t.session.run("true", inline=True)
    shell = t.session.shell_pid
    # /proc/self is whoever reads it: the session shell itself, not a subshell
    r = await t.session.run("read -r p _ </proc/self/stat; echo $p", inline=True)
    assert int(r.text) == shell
    assert int((await t.run("read -r p _ </proc/self/stat; echo $p", cheap=True)).text) != shell  # a cheap one forks
    assert (await t.session.run("echo bye; exit 4", inline=True)).exit_code == 4
    assert (await t.session.run("local v=kept; echo $v", inline=True)).stdout == b"kept\n"
    assert (await t.session.run("echo \"[$v]\"", inline=True)).stdout == b"[]\n"  # `local` did not leak
    assert t.session.shell_pid == shell and t.session.rebuilds == 0


async def test_inline_output_past_its_bound_is_cut_with_a_mark_and_the_next_frame_is_exact(t):
    cmd = "i=0; while [ $i -lt 2000 ]; do echo 0123456789; i=$((i+1)); done"
    r = await t.session.run(cmd, inline=True)
    kept, _, mark = r.stdout.rpartition(b"\n\n")
    assert INLINE_MAX <= len(kept) < INLINE_MAX + 11 and set(kept.split(b"\n")) == {b"0123456789"}
    assert b"inline command's output is read up to" in mark and r.exit_code == 0
    assert (await t.session.run("printf ok", inline=True)).stdout == b"ok"


async def test_a_hung_inline_command_is_cut_at_its_deadline_and_the_session_is_rebuilt(t):
    await t.session.run("true", inline=True)
    first = t.session.shell_pid
    t0 = time.monotonic()
    r = await t.session.run("while :; do :; done", inline=True, timeout=0.5)
    assert r.timed_out and r.exit_code == 124 and time.monotonic() - t0 < 3
    assert (await t.session.run("echo back", inline=True)).stdout == b"back\n"
    assert t.session.shell_pid not in (None, first)


@pytest.mark.parametrize("mode", ["watched", "cheap", "inline"])
async def test_pipelined_frames_answer_in_order_each_with_its_own_exit_code(t, mode):
    cmds = [f"printf 'o{i}'; printf 'e{i}\\n' >&2; exit {i}" for i in range(6)]
    cmds.insert(3, "printf '@@cockpit 5 0 1 1\\n@@cockpit-go 6\\n'")  # a payload that looks like later frames
    await t.session.start()
    proc, writes = t.session._sh.proc, []
    write = proc.write

    async def spy(data: bytes) -> None:
        writes.append(data)
        await write(data)

    proc.write = spy
    rs = await t.session.run_many(cmds, cheap=mode == "cheap", inline=mode == "inline")
    assert len(writes) == 1 and writes[0].count(b"printf '@@cockpit-go %s\\n'") == len(cmds)  # one write, one round trip
    assert [r.command for r in rs] == cmds
    assert [(r.stdout, r.stderr, r.exit_code) for r in rs] == [
        (b"o0", b"e0\n", 0), (b"o1", b"e1\n", 1), (b"o2", b"e2\n", 2),
        (b"@@cockpit 5 0 1 1\n@@cockpit-go 6\n", b"", 0),
        (b"o3", b"e3\n", 3), (b"o4", b"e4\n", 4), (b"o5", b"e5\n", 5)]
    assert (await t.session.run("echo next", inline=mode == "inline")).stdout == b"next\n"
    assert t.session.rebuilds == 0


async def test_a_pipelined_frame_past_its_deadline_is_timed_out_and_the_rest_run_on_a_new_shell(t, tmp_path):
    log = tmp_path / "ran"
    await t.session.run("true", inline=True)
    first = t.session.shell_pid
    rs = await t.session.run_many(
        [f"echo a >>{log}", "while :; do :; done", f"echo c >>{log}; echo c"], inline=True, timeout=0.5)
    assert [r.timed_out for r in rs] == [False, True, False] and rs[2].stdout == b"c\n"
    assert log.read_text() == "a\nc\n"  # each ran once
    assert t.session.shell_pid not in (None, first)


@pytest.mark.parametrize("mode", ["cheap", "inline"])
async def test_a_shell_dying_mid_batch_raises_and_nothing_that_may_have_started_runs_again(t, tmp_path, mode):
    log = tmp_path / "ran"
    cmds = [f"echo 1 >>{log}", f"echo 2 >>{log}; kill -9 $$", f"echo 3 >>{log}", f"echo 4 >>{log}"]
    with pytest.raises(RemoteError):
        await t.session.run_many(cmds, cheap=mode == "cheap", inline=mode == "inline")
    assert log.read_text() == "1\n2\n"  # the batch was not retried: 1 and 2 ran once, 3 and 4 never
    assert t.session.retries == 0 and t.session.rebuilds == 1
    assert (await t.session.run("echo back", inline=mode == "inline")).stdout == b"back\n"


async def test_a_shell_dead_before_a_batch_starts_runs_the_batch_once_on_a_new_shell(t, tmp_path):
    log = tmp_path / "ran"
    await t.session.run("true", inline=True)
    # the shell ends between two calls, after its own last frame: nothing of the next batch started
    await t.session._sh.proc.write(b"exec 1>&-; kill -9 $$\n")
    rs = await t.session.run_many([f"echo {i} >>{log}; echo {i}" for i in range(3)], inline=True)
    assert [r.stdout for r in rs] == [b"0\n", b"1\n", b"2\n"]
    assert log.read_text() == "0\n1\n2\n"
    assert t.session.rebuilds == 1


@pytest.mark.lab
async def test_inline_and_pipelined_frames_through_ssh_and_pct(lab, lab_config):
    from cockpit.core.runtimes import transport_for

    tr = transport_for(lab_config())
    s = tr.session  # type: ignore[attr-defined]
    marks = lab.workspace() / "pipelined"
    marks.unlink(missing_ok=True)
    try:
        r = await s.run("printf '@@cockpit 1 0 0 0\\nno newline'; printf err >&2; exit 42", inline=True)
        assert (r.stdout, r.stderr, r.exit_code) == (b"@@cockpit 1 0 0 0\nno newline", b"err", 42)
        r = await s.run("read -r p _ </proc/self/stat; echo $p", inline=True)
        assert int(r.text) == s.shell_pid  # inside the container, the session shell itself
        rs = await s.run_many([f"echo {i}; exit {i}" for i in range(20)], inline=True)
        assert [(r.stdout, r.exit_code) for r in rs] == [(f"{i}\n".encode(), i) for i in range(20)]
        t0 = time.monotonic()  # a spin that ends by itself: the abandoned shell then dies writing to the closed channel
        r = await s.run("local i=0; while [ $i -lt 4000000 ]; do i=$((i+1)); done", inline=True, timeout=0.5)
        assert r.timed_out and time.monotonic() - t0 < 3
        with pytest.raises(RemoteError):
            await s.run_many([f"echo 1 >>{marks}", "kill -9 $$", f"echo 3 >>{marks}"], inline=True)
        assert marks.read_text() == "1\n" and s.retries == 0
        assert (await s.run("echo back", inline=True)).stdout == b"back\n"
    finally:
        await tr.close()
