"""Cockpit's own footprint inside the target: its session shell and probes are marked, hidden by
default in the process pane (``o`` shows them) and never counted in findings.  Against the lab."""

from __future__ import annotations

import time

import pytest

from cockpit.core.engine import Engine
from cockpit.core.probes import procs as procs_probe
from cockpit.ui.app import create_app
from cockpit.ui.panes import ProcsPane
from tests.test_ui_app import SIZE
from tests.test_ui_support import wait_for

pytestmark = pytest.mark.lab


def _chain(view, shell_pid: int) -> set[int]:
    """The session shell and every process below it, from the table itself."""
    tree = procs_probe.ProcTree(view.procs)
    return {shell_pid} | {d.pid for d in tree.descendants(shell_pid)}


async def test_an_idle_containers_table_marks_the_session_shell_and_its_probe_chain(lab, lab_config):
    eng = Engine(lab_config())
    try:
        t0 = time.monotonic()
        view = await eng.observer.refresh_procs()
        dt = time.monotonic() - t0
        shell = eng.transport.session.shell_pid
        assert shell is not None and view.error is None, view.error
        chain = _chain(view, shell)
        by_pid = {p.pid: p for p in view.procs}
        # the probe saw itself: the shell, its subshell, timeout and ps, all below the session shell
        assert any(by_pid[p].args.startswith("ps -e") for p in chain), [by_pid[p].args for p in chain]
        assert view.own_pids == chain
        # what is left is the container itself: its init and nothing of cockpit
        rest = [p for p in view.procs if p.pid not in view.own_pids]
        assert rest and all("ps -e" not in p.args and p.pid != shell for p in rest)
        print(f"\nprocess probe: {len(view.procs)} processes, {len(view.own_pids)} of them cockpit's own, {dt * 1000:.1f} ms")
    finally:
        await eng.close()


async def test_cockpits_own_processes_are_never_counted_in_findings(lab, lab_config):
    """A job whose command line is the session's own (`/bin/sh`: the shell and its probe subshell)
    would be a duplicate job if cockpit counted itself: the finding is there without the marks and
    gone with them."""
    eng = Engine(lab_config(job={"command": "/bin/sh"}))
    try:
        view = await eng.observer.refresh_procs()
        assert view.own_pids
        unmarked = procs_probe.analyse(view.procs, job_command=eng.cfg.job.command)
        assert any(f.kind == "duplicate-job" for f in unmarked), "the probe's own ps must look like a copy"
        assert not [f for f in view.findings if f.kind == "duplicate-job"], [f.summary for f in view.findings]
        assert not [f for f in eng.observer.findings() if f.subject.get("pid") in view.own_pids]
    finally:
        await eng.close()


async def test_the_process_pane_hides_cockpits_own_processes_and_the_key_shows_them(lab, lab_config):
    app = create_app(lab_config(), refresh=True)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(ProcsPane)
        await wait_for(pilot, lambda: pane.view is not None and bool(pane.view.own_pids), timeout=30, what="a process table")
        own = {str(p) for p in pane.view.own_pids}
        shown = {key for key, _ in pane.rows()}
        assert shown and not (shown & own), f"cockpit's own rows shown: {shown & own}"
        assert "cockpit's own hidden (o)" in pane._note()
        await pilot.press("o")
        own = {str(p) for p in pane.view.own_pids}
        assert own <= {key for key, _ in pane.rows()}
        await wait_for(pilot, lambda: pane.table.row_count >= len(own) + len(shown), what="the own rows drawn")
        await pilot.press("o")
        await wait_for(pilot, lambda: not ({key for key, _ in pane.rows()} & {str(p) for p in pane.view.own_pids}),
                       what="hidden again")


# -- cheap probes: no watchdog forked, same framing, cockpit's deadline --------------------------

@pytest.fixture
async def local():
    from cockpit.core.remote.local import LocalTransport
    from cockpit.core.runtimes import HostRuntime

    tr = LocalTransport(HostRuntime())
    yield tr
    await tr.close()


@pytest.mark.parametrize("cmd, out, err, code", [
    ("printf 'a\\nb'; printf 'warn' >&2; exit 3", b"a\nb", b"warn", 3),
    ("printf 'x\\n\\n\\n'", b"x\n\n\n", b"", 0),
    ("printf '@@cockpit 1 0 0 0\\n@@cockpit-go 9\\n.'", b"@@cockpit 1 0 0 0\n@@cockpit-go 9\n.", b"", 0),
    ("printf 'h\\303\\251llo \\342\\202\\254\\n'", "héllo €\n".encode(), b"", 0),
    ("read -r u _ </proc/uptime; [ -n \"$u\" ] && echo up", b"up\n", b"", 0),
])
async def test_a_cheap_command_is_framed_exactly(local, cmd, out, err, code):
    r = await local.run(cmd, cheap=True)
    assert (r.stdout, r.stderr, r.exit_code) == (out, err, code)
    assert (await local.run(cmd)).stdout == out  # the watched path agrees


async def test_a_cheap_command_forks_no_watchdog_and_leaks_no_state(local):
    shell = (await local.run("echo $$", cheap=True)) and local.session.shell_pid
    # the cheap command's parent is the session shell itself: no `timeout`, no `sh -c` between
    r = await local.run("read -r _ _ _ pp _ </proc/self/stat; echo $pp", cheap=True)
    assert local.session.bytes_len and int(r.text) == shell
    w = await local.run("cat /proc/$PPID/cmdline | tr '\\0' ' '")
    assert w.text.startswith("timeout -k 1 10 sh -c")  # the watched path: `sh -c` under `timeout`
    await local.run("x=leaked; cd /; exit 5", cheap=True)
    assert (await local.run("echo \"[$x]\"; pwd", cheap=True)).text.splitlines()[0] == "[]"
    assert local.session.rebuilds == 0


async def test_a_hung_cheap_command_is_cut_at_its_deadline_and_the_session_is_rebuilt(local):
    await local.run("true", cheap=True)
    first = local.session.shell_pid
    t0 = time.monotonic()
    r = await local.run("read -r x </dev/stdin; sleep 30", cheap=True, timeout=0.5)
    assert r.timed_out and time.monotonic() - t0 < 3
    assert (await local.run("echo back", cheap=True)).stdout == b"back\n"
    assert local.session.shell_pid not in (None, first)


async def test_cheap_probes_over_ssh_come_back_to_their_callers(lab, lab_config):
    """50 concurrent cheap and watched probes through the lab's session, interleaved."""
    import asyncio

    eng = Engine(lab_config())
    try:
        tr = eng.transport
        rs = await asyncio.gather(*[tr.run(f"echo {i}; echo e{i} >&2", cheap=i % 2 == 0) for i in range(50)])
        assert [(r.text, r.err_text) for r in rs] == [(f"{i}\n", f"e{i}\n") for i in range(50)]
    finally:
        await eng.close()
