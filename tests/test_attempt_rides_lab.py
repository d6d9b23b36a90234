"""What rides together in an attempt's stop and launch, and that each answer is still judged by its
own stage (the real lab: sshd on 127.0.0.1, the pct emulator)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.actions.compiletrace import prepare_trace, trace_command, trace_plan
from cockpit.core.journal import Journal
from cockpit.core.layers import Layer, Outcome, Stage, Status, Verdict
from cockpit.core.remote.base import CommandResult


def spy(transport: Any, calls: list[list[str]]) -> None:
    """Every round trip through the target's session (one command or a batch), by its commands;
    the session still runs them (the transport's own ``run`` untouched: batches stay batches)."""
    session = transport.session
    real = session.run_many

    async def recorded(commands: Any, **kw: Any) -> Any:
        calls.append(list(commands))
        return await real(commands, **kw)

    session.run_many = recorded


@pytest.mark.lab
async def test_the_trace_directory_is_prepared_in_the_launch_prepares_round_trip(lab, lab_config, engines) -> None:
    eng = engines(lab_config())
    await eng.transport.run("true")  # the session is up
    calls: list[list[str]] = []
    spy(eng.transport, calls)
    res = await eng.attempt("rides")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    plan = trace_plan(eng.cfg, res.attempt)
    rider = trace_command(plan)
    assert rider is not None and res.job is not None and res.job.trace_dir == plan.directory
    [batch] = [c for c in calls if any("cockpit-pid1" in x for x in c)]
    assert rider in batch  # one round trip: PID 1's name, the preparation, the trace directory
    assert [c for c in calls if rider in c] == [batch]  # prepare_trace took the batch's answer
    assert os.path.isdir(plan.directory)
    prepare = next(s for s in res.verdict.stages if s.name == "launch: prepare")
    assert f"TORCH_TRACE={plan.directory}" in prepare.detail


@pytest.mark.lab
async def test_the_rider_is_exactly_what_prepare_trace_runs(lab_config) -> None:
    cfg = lab_config()
    sent: list[str] = []

    class Recorder:
        def __init__(self) -> None:
            self.cfg = cfg

        async def run(self, command: str, *, timeout: float = 10.0) -> CommandResult:
            sent.append(command)
            return CommandResult(command=command, exit_code=0, stdout=b"", stderr=b"", duration_s=0.0)

    plan = trace_plan(cfg, 7)
    await prepare_trace(Recorder(), plan, 7)  # type: ignore[arg-type]
    assert sent and sent[0] == trace_command(plan)
    cfg.compile.trace = False
    assert trace_command(trace_plan(cfg, 7)) is None  # nothing to prepare: nothing rides


@pytest.mark.lab
async def test_stop_signals_and_reads_the_table_in_one_command(lab, lab_config, engines) -> None:
    eng = engines(lab_config())
    first = await eng.attempt("first")
    assert first.outcome is Outcome.PASSED and first.job is not None, first.verdict.summary()
    calls: list[list[str]] = []
    spy(eng.transport, calls)
    res = await eng.attempt("second: stops the first job")
    assert res.outcome is Outcome.PASSED, res.verdict.summary()
    [term] = [x for c in calls for x in c if "kill -s TERM" in x]
    assert "cat /proc/uptime" in term and f"/proc/{first.job.pid}/stat" in term
    stages = {s.name: s for s in res.verdict.stages}
    assert stages["stop: terminate"].detail == "stopped with TERM"
    assert stages["stop: nothing left"].status is Status.OK
    gone = await eng.transport.run(f"test -e /proc/{first.job.pid} && echo alive || echo gone")
    assert gone.text.strip() == "gone"
    # the stopped job's last whole read of its torch.compile trace waits until the new job is spawned
    spawn = next(i for i, c in enumerate(calls) if any("setsid -f" in x for x in c))
    assert first.job.trace_dir
    reads = [i for i, c in enumerate(calls) if any(first.job.trace_dir + "/dedicated_log_torch_trace" in x for x in c)]
    assert reads and min(reads) > spawn, (reads, spawn)


def test_an_attempts_step_verdict_waits_for_the_next_durable_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "j.jsonl"
    synced: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        synced.append(fd)
        real(fd)

    j = Journal(path)
    a = j.start_attempt("n", "t")
    monkeypatch.setattr(os, "fsync", counting)
    v = Verdict("deploy")
    v.add(Stage("copy", Status.OK, Layer.CONFIG))
    j.record_verdict(a, "deploy", v.finish(), durable=False)
    assert synced == [] and '"verdict"' in path.read_text().splitlines()[-1]  # written, not synced
    j.record_verdict(a, "stop", v.finish())
    assert len(synced) == 1  # a verdict is durable by default
    j.record(a, "fate", durable=False, state="stopped")
    assert len(synced) == 1 and '"stopped"' in path.read_text().splitlines()[-1]
    j.finish_attempt(a, Outcome.PASSED)
    assert len(synced) == 2
    assert [e for e in Journal(path).events() if e.get("event") == "verdict" and e.get("action") == "deploy"]
