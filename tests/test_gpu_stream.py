"""GPUs as one long-lived `nvidia-smi -lms` against the lab: a streamed refresh starts no nvidia-smi,
a new value shows without a poll, the full probe (processes) still runs every apps_interval, a
killed stream is shown, polled meanwhile and restarted, a driver that cannot loop is polled, and a
hung driver (no more rows) falls back to the probe that reports the hang."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from cockpit.core.engine import Engine
from cockpit.core.probes.gpu.command import GPU_FIELDS
from cockpit.core.probes.gpu.follow import GpuFollower, merge_sample
from cockpit.core.probes.gpu.model import GPUSnapshot
from tests.lab.util import await_for, pids_where

pytestmark = pytest.mark.lab


def _counting_smi(lab, tmp_path: Path, *, refuse_loop: bool = False) -> tuple[str, Path]:
    """A wrapper around the lab's nvidia-smi that appends its arguments to a file each time it starts
    (inside the container too: the lab dir is visible there); ``refuse_loop``: an nvidia-smi without
    ``-lms``, which refuses it as the real tool refuses an unknown option."""
    calls = lab.dir / f"smi-calls-{tmp_path.name}"
    wrapper = lab.dir / f"smi-{tmp_path.name}"
    refuse = ('case " $* " in *" -lms "*) echo "Invalid combination of input arguments. Please run '
              '\'nvidia-smi -h\' for help."; exit 2;; esac\n') if refuse_loop else ""
    wrapper.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\n{refuse}exec {lab.nvidia_smi} \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper), calls


def _calls(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _loops(lab) -> list[int]:
    mine = str(lab.dir).encode()
    return pids_where(lambda argv: any(a.startswith(mine) and a.endswith(b"/nvidia-smi") for a in argv) and b"-lms" in argv)


async def _streaming(obs, deadline: float = 20) -> None:
    async def up() -> bool:
        return (await obs.refresh_gpu()).mode == "stream"
    await await_for(up, deadline, "a streamed GPU refresh", interval=0.2)


async def test_streamed_refreshes_start_no_nvidia_smi_and_show_new_values(lab, lab_config, tmp_path):
    smi, calls = _counting_smi(lab, tmp_path)
    lab.set_gpu_state(gpus=[lab.gpu(0, **{"utilization.gpu": 5}), lab.gpu(1, **{"utilization.gpu": 6})])
    eng = Engine(lab_config(gpu={"nvidia_smi": smi, "apps_interval": 60}, ui={"refresh_interval": 0.3}))
    obs = eng.observer
    try:
        first = await obs.refresh_gpu()
        assert first.mode == "poll" and len(first.snapshot.gpus) == 2
        await _streaming(obs)
        n = len(_calls(calls))
        for _ in range(10):
            v = await obs.refresh_gpu()
            assert v.mode == "stream" and [g.utilization_pct for g in v.snapshot.gpus] == [5, 6]
        assert len(_calls(calls)) == n, _calls(calls)[n:]  # no nvidia-smi started by ten refreshes
        assert sum("-lms 300" in c for c in _calls(calls)) == 1
        lab.set_gpu_state(gpus=[lab.gpu(0, **{"utilization.gpu": 97}), lab.gpu(1, **{"utilization.gpu": 6})])

        async def seen() -> bool:
            return (await obs.refresh_gpu()).snapshot.gpus[0].utilization_pct == 97
        await await_for(seen, 10, "the new utilisation through the stream", interval=0.1)
        assert obs.gpu.mode == "stream" and len(_calls(calls)) == n
        assert obs.to_dict()["gpu"]["mode"] == "stream" and obs.to_dict()["streams"]["gpu"] == {"mode": "stream", "why": ""}
        procs = await obs.refresh_procs()  # the stream's shell and nvidia-smi are cockpit's own: hidden, never findings
        fol = obs.streams.gpu
        streamers = {p.pid for p in procs.procs if "-lms" in p.args}
        assert fol is not None and fol.shell_pid in procs.own_pids and streamers and streamers <= procs.own_pids, (streamers, procs.own_pids)
    finally:
        await eng.close()
    await await_for(lambda: not _loops(lab), 10, "the stream's nvidia-smi ended with cockpit")


async def test_the_full_probe_still_runs_every_apps_interval(lab, lab_config, tmp_path):
    smi, calls = _counting_smi(lab, tmp_path)
    eng = Engine(lab_config(gpu={"nvidia_smi": smi, "apps_interval": 1.5}, ui={"refresh_interval": 0.3}))
    obs = eng.observer
    try:
        await obs.refresh_gpu()
        await _streaming(obs)
        modes = []
        for _ in range(30):
            modes.append((await obs.refresh_gpu()).mode)
            if modes[-1] == "poll":
                break
            await __import__("asyncio").sleep(0.1)
        assert "poll" in modes, modes  # the per-process list is asked again within apps_interval (+ a tick)
        assert any("--query-compute-apps" in c for c in _calls(calls)[1:])
    finally:
        await eng.close()


async def test_a_killed_stream_is_polled_meanwhile_shown_and_restarted(lab, lab_config, tmp_path):
    smi, _calls_file = _counting_smi(lab, tmp_path)
    eng = Engine(lab_config(gpu={"nvidia_smi": smi, "apps_interval": 60}, ui={"refresh_interval": 0.3}))
    obs = eng.observer
    try:
        await obs.refresh_gpu()
        await _streaming(obs)
        fol = obs.streams.gpu
        assert fol is not None and _loops(lab)
        for pid in _loops(lab):
            os.kill(pid, signal.SIGKILL)
        await await_for(lambda: fol.deaths >= 1, 10, "the death noticed")
        assert "exit status 137" in (fol.last_death or ""), fol.last_death
        assert obs.streams.modes()["gpu"][0] == "poll" or fol.ready
        v = await obs.refresh_gpu()
        assert v.snapshot is not None and v.snapshot.gpus  # polled meanwhile: the pane keeps its data
        await await_for(lambda: fol.ready and fol.starts >= 2, 15, "the stream restarted")
        await _streaming(obs)
    finally:
        await eng.close()


async def test_an_nvidia_smi_that_cannot_loop_is_polled(lab, lab_config, tmp_path):
    smi, calls = _counting_smi(lab, tmp_path, refuse_loop=True)
    eng = Engine(lab_config(gpu={"nvidia_smi": smi}, ui={"refresh_interval": 0.3}))
    obs = eng.observer
    try:
        await obs.refresh_gpu()
        await await_for(lambda: obs.streams.gpu is not None and obs.streams.gpu.state == "unsupported", 15, "given up")
        mode, why = obs.streams.modes()["gpu"]
        assert mode == "poll" and "exit status 2" in why, why
        n = len(_calls(calls))
        v = await obs.refresh_gpu()
        assert v.mode == "poll" and v.snapshot.gpus and len(_calls(calls)) > n
    finally:
        await eng.close()


async def test_a_hung_driver_stops_the_rows_and_the_probe_reports_the_hang(lab, lab_config, tmp_path):
    smi, _ = _counting_smi(lab, tmp_path)
    eng = Engine(lab_config(gpu={"nvidia_smi": smi, "apps_interval": 60, "timeout": 1}, ui={"refresh_interval": 0.3}))
    obs = eng.observer
    try:
        await obs.refresh_gpu()
        await _streaming(obs)
        lab.set_gpu_state("hang")

        async def hung() -> bool:
            v = await obs.refresh_gpu()
            return v.mode == "poll" and v.error is not None
        await await_for(hung, 20, "the hang reported by the full probe", interval=0.2)
        assert "did not answer" in obs.gpu.error or "hung" in obs.gpu.error or "timed out" in obs.gpu.error.lower(), obs.gpu.error
    finally:
        lab.set_gpu_state()
        await eng.close()


def test_samples_are_cut_by_gpu_count_or_a_repeating_index() -> None:
    fields = GPU_FIELDS[:4]
    fol = GpuFollower(lambda cmd: None, "nvidia-smi", fields, 1.0)  # type: ignore[arg-type, return-value]
    fol.state = "following"
    rows = ["0, NVIDIA H100 80GB HBM3, GPU-a, 00000000:01:00.0", "1, NVIDIA H100 80GB HBM3, GPU-b, 00000000:02:00.0"]
    assert fol.on_line(rows[0]) and fol.on_line(rows[1]) and fol.sample is None  # not known complete yet
    assert fol.on_line(rows[0]) and fol.sample is not None and fol.sample[1] == rows
    fol.gpus = 2
    assert fol.on_line(rows[1]) and fol.sample[1] == [rows[0], rows[1]]  # complete at the count
    assert not fol.on_line("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    assert list(fol.noise)[-1].startswith("NVIDIA-SMI has failed")
    snap = merge_sample(GPUSnapshot(gpus=[]), fol.frame(rows), 1.0)
    assert snap is None  # another set of GPUs than the full probe's: the probe runs


async def test_a_one_shot_status_starts_no_stream(lab, lab_config, tmp_path):
    """`cockpit status` refreshes once and closes: a stream would be started only to be killed."""
    from cockpit.core.status import collect_status

    smi, calls = _counting_smi(lab, tmp_path)
    report = await collect_status(lab_config(gpu={"nvidia_smi": smi}))
    assert report["gpu"]["gpus"] and report["gpu"]["mode"] == "poll"
    assert report["streams"] == {} and not [c for c in _calls(calls) if "-lms" in c], _calls(calls)
