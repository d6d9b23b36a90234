"""The SSH transport and the persistent session against the lab: a real sshd, emulated Proxmox."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from cockpit.core.connectivity import check_connectivity
from cockpit.core.layers import Layer, Status, Verdict
from cockpit.core.remote.base import RemoteError
from cockpit.core.remote.ssh import SSHTransport
from cockpit.core.runtimes import transport_for

pytestmark = pytest.mark.lab


@pytest.fixture
def cfg_for(lab_config):
    return lab_config


@pytest.fixture
async def tr(cfg_for):
    t = transport_for(cfg_for())
    assert isinstance(t, SSHTransport)
    yield t
    await t.close()


async def test_session_runs_inside_the_container(tr, lab):
    r = await tr.run("cat /proc/1/comm; echo $PATH")
    comm, path = r.text.splitlines()
    assert comm == "init"  # the container's PID 1, not the host's
    assert path == "/sbin:/bin:/usr/sbin:/usr/bin"  # pct exec's minimal PATH


async def test_framing_edge_cases_through_pct(tr, lab):
    r = await tr.run("printf 'no newline'; printf 'err' >&2; exit 42")
    assert (r.stdout, r.stderr, r.exit_code) == (b"no newline", b"err", 42)
    r = await tr.run("printf '@@cockpit 1 0 99 0\\n@@cockpit-ready x\\n'")
    assert r.stdout == b"@@cockpit 1 0 99 0\n@@cockpit-ready x\n"
    blob = bytes(range(256)) * 40
    (lab.workspace() / "blob").write_bytes(blob)
    r = await tr.run(f"cat {lab.workspace()}/blob")
    assert r.stdout == blob
    r = await tr.run("head -c 1000000 /dev/zero")  # one line of 1 MB of NULs: under the line cap, intact
    assert r.stdout == bytes(1_000_000)
    assert (await tr.run("echo fine")).stdout == b"fine\n"


async def test_exit_codes_preserved(tr):
    codes = [0, 1, 2, 126, 127, 255]
    rs = [await tr.run(f"exit {c}") for c in codes]
    assert [r.exit_code for r in rs] == codes
    r = await tr.run("no-such-command-here")
    assert r.exit_code == 127


async def test_timeout_kills_remotely_and_session_survives(tr, lab):
    t0 = time.monotonic()
    r = await tr.run("sleep 30; echo never", timeout=1)
    assert r.timed_out and r.stdout == b"" and time.monotonic() - t0 < 5
    r = await tr.run("ps -e -o comm= | grep -c '^sleep$' || true")
    assert r.text.strip() == "0"  # the sleep was killed inside the container, not abandoned
    assert (await tr.run("echo usable")).stdout == b"usable\n"


async def test_fifty_concurrent_probes(tr):
    rs = await asyncio.gather(*[tr.run(f"echo {i}") for i in range(50)])
    assert [r.stdout.decode().strip() for r in rs] == [str(i) for i in range(50)]


async def test_session_killed_from_outside_is_rebuilt(tr, lab):
    r = await tr.run("ps -o ppid= -p $PPID")  # the session shell is the parent of `timeout`
    shell_pid = int(r.text.strip())
    assert lab.exec_in(200, f"kill -9 {shell_pid}").returncode == 0
    try:
        out = await tr.run("echo again")
    except RemoteError as e:
        assert e.layer is Layer.CONTAINER, e
        out = await tr.run("echo again")
    assert out.stdout == b"again\n"
    assert tr.session.rebuilds >= 1


async def test_host_channels_are_capped_below_maxsessions(tr):
    # sshd's MaxSessions is 10: without the cap on channels, 20 at once would be refused
    rs = await asyncio.gather(*[tr.run_host("sleep 0.3; echo ok") for _ in range(20)])
    assert all(r.stdout == b"ok\n" for r in rs)


async def test_stream_runs_inside_the_container_and_can_be_closed_early(tr):
    out = b"".join([c async for c in tr.stream("cat /proc/1/comm")])
    assert out == b"init\n"
    for _ in range(3):  # a stream closed early ends; the next one opens
        it = tr.stream("echo up; exec sleep 30")
        assert await asyncio.wait_for(it.__anext__(), 10) == b"up\n"
        await it.aclose()
    with pytest.raises(asyncio.TimeoutError):
        async for _ in tr.stream("echo start; sleep 5", timeout=0.5):
            pass


async def status(cfg) -> Verdict:
    t = transport_for(cfg)
    try:
        return await check_connectivity(t, cfg)
    finally:
        await t.close()


async def test_status_all_layers_pass(cfg_for):
    v = await status(cfg_for())
    assert v.ok, v.summary()
    assert [s.name for s in v.stages] == ["ssh reached", "host answers", "target shell answers", "workdir exists"]


async def test_unknown_container_is_a_host_failure(cfg_for):
    v = await status(cfg_for(target={"container": 299}))
    assert v.layer is Layer.HOST
    assert "Configuration file 'nodes/pve/lxc/299.conf' does not exist" in v.failed_stage.detail
    assert [s.status for s in v.stages[2:]] == [Status.NOT_REACHED] * 2


async def test_stopped_container_is_a_host_failure(cfg_for, lab):
    lab.add_container(201)
    lab.pct("stop", 201, check=True)
    try:
        v = await status(cfg_for(target={"container": 201}))
        assert v.layer is Layer.HOST and "stopped" in v.failed_stage.detail
        # the session itself maps pct's real text to the host layer too
        t = transport_for(cfg_for(target={"container": 201}))
        with pytest.raises(RemoteError) as ei:
            await t.run("true")
        await t.close()
        assert ei.value.layer is Layer.HOST and "container '201' not running!" in ei.value.message
    finally:
        lab.remove_container(201)


async def test_sshd_down_is_an_ssh_failure_and_backoff_applies(cfg_for, lab):
    cfg = cfg_for()
    lab.stop()
    t = transport_for(cfg)
    try:
        with pytest.raises(RemoteError) as ei:
            await t.run("true")
        assert ei.value.layer is Layer.SSH and "refused" in ei.value.message
        t0 = time.monotonic()
        with pytest.raises(RemoteError) as again:
            await t.run("true")
        assert "retrying in" in again.value.hint and time.monotonic() - t0 < 0.2  # no hammering
        lab.start()
        await t.connect(force=True)
        assert (await t.run("echo back")).stdout == b"back\n"
    finally:
        await t.close()


async def test_changed_host_key_is_refused_and_nothing_runs(cfg_for, lab):
    cfg = cfg_for()
    marker = lab.workspace() / "must-not-exist"
    lab.regenerate_host_key()
    t = transport_for(cfg)
    try:
        with pytest.raises(RemoteError) as ei:
            await t.run(f"touch {marker}")
        assert ei.value.layer is Layer.SSH and "not trusted" in ei.value.message
        assert not marker.exists()
    finally:
        await t.close()


async def test_connection_loss_is_reported_then_recovered(tr, lab):
    assert (await tr.run("echo 1")).stdout == b"1\n"
    assert lab.drop_connections() >= 1
    try:
        r = await tr.run("echo 2")
    except RemoteError as e:
        assert e.layer is Layer.SSH
        await tr.connect(force=True)
        r = await tr.run("echo 2")
    assert r.stdout == b"2\n"


def run_cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "cockpit", *args], capture_output=True, text=True, timeout=timeout)


def test_cli_status_json_against_the_lab(cfg_for, tmp_path):
    cfg_for()
    r = run_cli("status", "--json", "--config", str(tmp_path / "cockpit.toml"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["ok"] and [s["status"] for s in d["verdict"]["stages"]] == ["ok"] * 4


def test_cli_status_exit_1_names_the_layer(cfg_for, tmp_path):
    cfg_for(job={"workdir": "/nonexistent/workspace"})
    r = run_cli("status", "--json", "--config", str(tmp_path / "cockpit.toml"))
    assert r.returncode == 1
    d = json.loads(r.stdout)
    assert d["verdict"]["layer"] == "container" and d["verdict"]["stages"][-1]["name"] == "workdir exists"
