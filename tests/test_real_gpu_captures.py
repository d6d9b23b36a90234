"""What a real GPU machine printed, read by cockpit, and the lab's emulators held to it.

Captured by ``tests/lab/gpu_capture/run.sh`` on one NVIDIA H200 (driver 580.159.04, CUDA 13.0,
torch 2.11.0+cu130): cockpit's own ``nvidia-smi`` probe idle and with a process holding 4 GiB
(its ``/proc`` sections and the ``/dev/nvidia*`` scan included), the tool's answers to bad input,
and torch.compile's trace of a small CUDA job run twice on one inductor cache.  The other GPU
fixtures are reconstructed from documented formats; these are the real thing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cockpit.core.compile import TraceParser, filter_file, parse_text, summarize
from cockpit.core.compile.model import CompileSummary
from cockpit.core.probes.gpu import parse_gpu_output
from cockpit.core.probes.gpu.command import GPU_FIELDS
from cockpit.core.probes.gpu.follow import GpuFollower, merge_sample
from cockpit.core.probes.gpu.procmap import fdscan_command, parse_fdscan
from cockpit.core.probes.gpu.values import is_na
from tests.lab.util import await_for

FIXTURES = Path(__file__).parent / "fixtures"
EMULATOR = Path(__file__).parent / "lab" / "bin" / "nvidia-smi"
H200_UUID = "GPU-83645981-58de-c4d1-0b67-2fc4e6d91500"


def test_the_probe_reads_an_idle_h200() -> None:
    snap = parse_gpu_output((FIXTURES / "gpu" / "h200_580_idle.txt").read_text(), "", 0)
    assert snap.ok and snap.findings == [] and snap.unparsed == [] and snap.processes == []
    (g,) = snap.gpus
    assert (g.name, g.uuid, g.bus_id, g.driver_version) == ("NVIDIA H200", H200_UUID, "00000000:00:06.0", "580.159.04")
    assert (g.memory_used_mib, g.memory_total_mib, g.utilization_pct, g.power_draw_w, g.power_limit_w) == (0, 143771, 0, 78.74, 700.0)
    assert is_na(g.fan_pct) and g.fan_pct.reason == "[N/A]" and g.mig_mode == "Disabled" and g.ecc_uncorrected == 0
    assert snap.exit_codes == {"query-gpu": 0, "compute-apps": 0}


def test_the_probe_reads_a_busy_h200_with_its_process_and_device_files() -> None:
    text = (FIXTURES / "gpu" / "h200_580_busy_describe.txt").read_text()
    snap = parse_gpu_output(text, "", 0)
    assert snap.ok and snap.findings == [] and snap.unparsed == []
    (g,) = snap.gpus
    assert (g.utilization_pct, g.memory_used_mib) == (100, 4715)
    (p,) = snap.processes
    assert (p.pid, p.process_name, p.used_memory_mib, p.gpu_index) == (1004, "python3", 4706, 0)
    assert snap.pid_table is not None
    info = snap.pid_table.pids[1004]
    assert info.state == "R" and info.cgroup == "/process_api/63786c81e5e3d79e393606d2b8431363"
    # 191 processes were scanned; only the holder of /dev/nvidia* is one (its parent, `timeout`, holds none)
    assert text.count("| dir /proc/") == 191
    assert parse_fdscan(text) == {1004: ["nvidia-uvm", "nvidia0", "nvidiactl"]}


def _emulator(tmp_path: Path) -> Path:
    """The lab's nvidia-smi with a state like the captured machine's (one H200, driver 580)."""
    lab = tmp_path / "lab"
    (lab / "bin").mkdir(parents=True)
    (lab / "state").mkdir()
    shutil.copy(EMULATOR, lab / "bin" / "nvidia-smi")
    state = {"driver_version": "580.159.04", "cuda_version": "13.0",
             "gpus": [{"index": 0, "name": "NVIDIA H200", "uuid": H200_UUID, "pci.bus_id": "00000000:00:06.0"}]}
    (lab / "state" / "gpu.json").write_text(json.dumps(state))
    return lab / "bin" / "nvidia-smi"


CLI = json.loads((FIXTURES / "gpu" / "h200_580_cli.json").read_text())["runs"]


@pytest.mark.parametrize("run", CLI, ids=[" ".join(r["argv"])[:40] for r in CLI])
def test_the_emulator_answers_as_the_real_tool_did(run: dict[str, object], tmp_path: Path) -> None:
    smi = _emulator(tmp_path)
    argv = run["argv"]
    assert isinstance(argv, list)
    res = subprocess.run([sys.executable, str(smi), *argv], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert (res.stdout + res.stderr, res.returncode) == (run["output"], run["rc"])


def _summary(case: str) -> CompileSummary:
    parser, events = TraceParser(), []
    for path in sorted((FIXTURES / "torch_trace" / case).glob("dedicated_log_torch_trace_*.log")):
        events += parser.feed(path.read_bytes(), path.name) + parser.close(path.name)
    assert parser.malformed == 0
    return summarize(events, parser.malformed)


def test_a_real_cuda_compile_reads_cold_then_warm() -> None:
    cold, warm = _summary("cuda_cache_cold"), _summary("cuda_cache_warm")
    assert (cold.cache_state, cold.cache_hits, cold.cache_misses) == ("cold", 0, 3)
    assert (warm.cache_state, warm.cache_hits, warm.cache_misses) == ("warm", 3, 0)
    assert [a.kind for a in cold.alerts] == ["cache_cold"] and warm.alerts == []
    assert cold.frames[0].cache == {"aotautograd": {"hit": 0, "miss": 1, "bypass": 0}, "fx_graph": {"hit": 0, "miss": 2, "bypass": 0}}
    assert cold.frames[0].last_compile_s == pytest.approx(2.953, abs=0.001)
    assert warm.frames[0].last_compile_s == pytest.approx(0.996, abs=0.001)


def test_torch_2_11_names_its_version_and_the_jobs_own_line() -> None:
    # torch 2.11 writes no torch_version artifact (its compile metrics name it), and compiles a
    # module through a wrapper of its own, torch/_dynamo/external_utils.py's `inner`: the frame
    # read "inner" at a line of torch; the job's own call is where the user looks
    for case in ("cuda_cache_cold", "cuda_cache_warm"):
        s = _summary(case)
        assert s.torch_version == "2.11.0+cu130"
        (f,) = s.frames
        assert f.function.startswith("inner (torch.compile's wrapper") and f.where == "/work/train/cuda_cache.py:14", (f.function, f.where)
        # the target-side filter's stream gives the same
        lines = [line for path in sorted((FIXTURES / "torch_trace" / case).glob("*.log")) for line in filter_file(str(path))]
        events, _ = parse_text("\n".join(lines) + "\n", "stream")
        small = summarize(events)
        assert (small.torch_version, small.frames[0].function, small.frames[0].where) == (s.torch_version, f.function, f.where)


def test_the_fd_scan_names_only_the_holders(tmp_path: Path) -> None:
    # the real scan above named 191 directories to find one holder, on every GPU refresh of a
    # container; `ls -l` here (on the PATH ahead of the real one) prints what the real one printed
    # for a holder, a process without one, and a process whose fds could not be read
    listing = ("/proc/1002/fd:\ntotal 0\nlr-x------ 1 root root 64 Dec  4 15:47 0 -> /dev/null\n"
               "l-wx------ 1 root root 64 Dec  4 15:47 1 -> pipe:[40211]\n\n"
               "/proc/1004/fd:\ntotal 0\nlrwx------ 1 root root 64 Dec  4 15:47 10 -> /dev/nvidia-uvm\n"
               "lrwx------ 1 root root 64 Dec  4 15:47 11 -> /dev/nvidia0\nlrwx------ 1 root root 64 Dec  4 15:47 12 -> /dev/nvidiactl\n\n"
               "/proc/9/fd:\n")
    shim = tmp_path / "bin"
    shim.mkdir()
    (tmp_path / "listing").write_text(listing)
    # once: the scan lists zombies' threads in a second `ls` when this machine has a zombie somewhere
    (shim / "ls").write_text(f"#!/bin/sh\n[ -e '{tmp_path / 'listed'}' ] && exit 0\n: > '{tmp_path / 'listed'}'\ncat '{tmp_path / 'listing'}'\n")
    (shim / "ls").chmod(0o755)
    env = {"PATH": f"{shim}:/usr/bin:/bin"}
    out = subprocess.run(["/bin/sh", "-c", fdscan_command()], capture_output=True, text=True, env=env, timeout=30).stdout
    assert [line for line in out.splitlines() if line.startswith("| dir")] == ["| dir /proc/1004/fd:"], out
    assert parse_fdscan(out) == {1004: ["nvidia-uvm", "nvidia0", "nvidiactl"]}


def _stream(name: str) -> list[tuple[float, str]]:
    """A captured GPU stream: (arrival time, line) as run.sh stamped each line."""
    out = []
    for raw in (FIXTURES / "gpu" / name).read_text().splitlines():
        at, _, line = raw.partition(" ")
        out.append((float(at), line))
    return out


@pytest.mark.parametrize("name", ["h200_580_stream_idle.txt", "h200_580_stream_busy.txt"])
async def test_the_gpu_stream_follows_what_the_real_loop_printed(name: str) -> None:
    lines = _stream(name)
    rows = [(at, line) for at, line in lines if not line.startswith("@@")]
    # the real loop: a row 30-50 ms after it starts, then one every 500 ms (-lms 500); a sample older
    # than two periods is not used (GpuFollower.fresh), so one late row never blanks the pane
    gaps = [b[0] - a[0] for a, b in zip(rows, rows[1:], strict=False)]
    assert len(rows) == 6 and all(0.45 < g < 0.56 for g in gaps), gaps

    async def open_lines(command: str) -> Any:
        for _, line in lines:
            yield (line + "\n").encode()

    follower = GpuFollower(open_lines, "nvidia-smi", GPU_FIELDS, 0.5, gpus=1)
    follower.start()
    try:
        await await_for(lambda: follower.deaths == 1, 5, "the stream's end")
    finally:
        await follower.close()
    assert follower.shell_pid == int(lines[0][1].split()[2]) and follower.version == 6 and not follower.noise
    assert follower.state == "restarting" and "exit status 0" in (follower.last_death or "")  # TERM ends it with 0: a death, not "unsupported"
    assert follower.sample is not None and follower.sample[1] == [rows[-1][1]]
    full = parse_gpu_output(follower.frame([rows[0][1]]), "", 0)
    merged = merge_sample(full, follower.frame(follower.sample[1]), rows[-1][0])
    assert merged is not None and merged.findings == [] and merged.collected_at == rows[-1][0]
    want = parse_gpu_output(follower.frame([rows[-1][1]]), "", 0).gpus[0]
    assert merged.gpus[0] == want and merged.gpus[0].memory_total_mib == 143771
