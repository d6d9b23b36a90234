"""An attempt's round trips: what rides together, what goes through the session, and that each
answer is still judged by its own stage (the real lab: sshd on 127.0.0.1, the pct emulator)."""

from __future__ import annotations

from typing import Any

import pytest

from cockpit.core.actions import deploy as deploy_mod
from cockpit.core.actions.base import ActionContext
from cockpit.core.actions.strays import _needle, strays_command
from cockpit.core.compile_cache import read_trace
from cockpit.core.layers import Outcome

pytestmark = pytest.mark.lab


def spy(transport: Any, calls: list[tuple[str, str]]) -> None:
    """Every channel command and every batch the real transport is asked for (it still runs them)."""
    for name in ("run_channel", "run_many"):
        real = getattr(type(transport), name)

        def make(real: Any, name: str) -> Any:
            async def recorded(commands: Any, **kw: Any) -> Any:
                calls.append((name, commands if isinstance(commands, str) else " ;; ".join(commands)))
                return await real(transport, commands, **kw)
            return recorded

        setattr(transport, name, make(real, name))


async def test_a_small_deploy_rides_one_session_batch_with_the_inventory(lab, lab_config, engines, monkeypatch) -> None:
    eng = engines(lab_config())
    calls: list[tuple[str, str]] = []
    spy(eng.transport, calls)
    res = await eng.attempt("trips")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    names = [s.name for s in res.verdict.stages]
    assert "deploy: checksums" in names and "clear-cache: caches" in names
    assert not [c for kind, c in calls if kind == "run_channel" and "tar -xzf" in c]  # no channel, no pct exec
    batch = [c for kind, c in calls if kind == "run_many" and "tar -xzf" in c]
    assert len(batch) == 1 and "sha256sum -z" in batch[0] and "cockpit-inv" in batch[0]  # upload, checksums, inventory
    # a tar over the limit goes on a channel of its own, and is judged the same
    monkeypatch.setattr(deploy_mod, "SESSION_UPLOAD_MAX", 0)
    calls.clear()
    res = await eng.attempt("trips, large")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    assert [c for kind, c in calls if kind == "run_channel" and "tar -xzf" in c]


async def test_a_rider_answers_once_and_its_trouble_never_becomes_the_carriers(lab, lab_config, engines) -> None:
    eng = engines(lab_config())
    ctx = ActionContext(eng.cfg, eng.transport)
    ctx.ride("echo rider $$")
    [carrier] = await ctx.run_many(["echo carrier"])
    assert carrier.text == "carrier\n" and "echo rider $$" in ctx.answered
    first = await ctx.run("echo rider $$")
    again = await ctx.run("echo rider $$")  # handed out once: the second runs again (another sh -c, another pid)
    assert first.ok and again.ok and first.text != again.text
    # a rider that kills the session shell after the carrier answered: the carrier runs again alone
    pid = eng.transport.session.shell_pid
    assert pid
    ctx.ride(f"kill -9 {pid}")
    [carrier] = await ctx.run_many(["echo carrier"])
    assert carrier.ok and carrier.text == "carrier\n"
    assert eng.transport.session.shell_pid != pid  # the shell was rebuilt under it


async def test_one_batch_holds_cheap_and_watched_frames(lab, lab_config, engines) -> None:
    eng = engines(lab_config())
    tr = eng.transport
    await tr.run("true")
    cheap, watched = await tr.run_many(["echo $$", "echo $$"], cheap=[True, False])
    # a cheap frame is a subshell of the session shell ($$ is the shell's); a watched one its own sh -c
    assert int(cheap.text) == tr.session.shell_pid != int(watched.text)


def test_the_strays_scan_never_names_its_own_needle() -> None:
    cmd = "python3 /opt/train/run_training.py --config 'a b.yaml'"
    assert _needle(cmd) == "/opt/train/run_training.py" and _needle(cmd) not in strays_command(cmd)
    assert "\n" not in _needle("sh -c 'x\nlong line here\ny'")


async def test_the_trace_filter_starts_only_for_a_trace_with_bytes(lab, lab_config, engines) -> None:
    eng = engines(lab_config())
    ctx = ActionContext(eng.cfg, eng.transport)
    trace = lab.workspace(200) / ".trace-check"
    trace.mkdir(exist_ok=True)
    (trace / "dedicated_log_torch_trace_empty.log").write_text("")
    sent: list[str] = []
    real = eng.transport.run

    async def recorded(command: str, **kw: Any) -> Any:
        sent.append(command)
        return await real(command, **kw)

    eng.transport.run = recorded  # type: ignore[method-assign]
    summary = await read_trace(ctx, str(trace))
    assert summary is not None and not summary.events and not [c for c in sent if "python3" in c]
    (trace / "dedicated_log_torch_trace_1.log").write_text("not a trace line\n")
    sent.clear()
    await read_trace(ctx, str(trace))
    assert [c for c in sent if "python3" in c]


async def test_a_connect_that_fails_at_the_workdir_leaves_the_deploy_dest_untouched(lab, lab_config, engines, tmp_path) -> None:
    # the workdir cannot exist (its parent is a file); the deploy dest is a writable directory: the
    # early upload's own workdir test holds it back, so the failed attempt wrote nothing there
    blocker = lab.workspace(200) / "not-a-dir"
    blocker.write_text("")
    dest = lab.workspace(200) / "early-dest"
    dest.mkdir(exist_ok=True)
    cfg = lab_config(job={"workdir": str(blocker / "wd")}, deploy={"dest": str(dest)})
    eng = engines(cfg)
    res = await eng.attempt("connect fails")
    fs = res.verdict.failed_stage
    assert fs is not None and fs.name == "connect: workdir exists", res.verdict.summary()
    assert not any(s.name.startswith("deploy") and s.status.value == "ok" for s in res.verdict.stages)
    assert list(dest.iterdir()) == []
