"""What per-process GPU memory in a container costs per GPU refresh, against the lab.

A job with two ranks holding GPU memory in container 210 (GPU passthrough), the emulated
nvidia-smi on the "host" and in the container.  Interleaved, per round:

* **before** (the baseline): the GPU probe as it was, both queries in the container through its
  session; the driver lists no process there, so the pane said "no compute processes";
* **host query, host session** (what cockpit does now): the GPU query in the container and, at the
  same time, the process list plus each pid's ``/proc`` entry and ``lxc-info`` on the host,
  through the host's persistent shell;
* **host query, a channel per refresh**: the same through ``run_host`` (a new SSH channel each
  time), to show what the host session saves;
* **fd scan fallback**: the host unavailable: the GPU query and the fd scan in the container, in
  one command once the fallback is known to be needed.

Usage: ``python bench/bench_gpu_procs.py [--n 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.config import load_config
from cockpit.core.engine import Engine  # noqa: E402
from cockpit.core.probes import gpu as gpu_probe  # noqa: E402
from tests.lab import Lab, wait_for  # noqa: E402
from tests.lab.gpu import add_gpu_container  # noqa: E402


def runner(run: Any) -> gpu_probe.Runner:
    async def go(cmd: str) -> tuple[bytes, bytes, int | None]:
        res = await run(cmd, timeout=15)
        return res.stdout, res.stderr, res.exit_code
    return go


async def main(n: int) -> dict[str, float]:
    """Prints the figures; answers each way's median in ms."""
    with Lab() as lab:
        add_gpu_container(lab, 210)
        r = lab.exec_in(210, f"setsid {lab.jobsim_command('--gpu-mem', 30000, '--gpu-procs', 2, '--steps', 0)} "
                             "</dev/null >/dev/null 2>&1 & echo $!", check=True)
        job = int(r.stdout)
        path = Path(tempfile.mkdtemp()) / "cockpit.toml"
        lab.write_config(path, target={"container": 210})
        cfg = load_config(path)
        eng = Engine(cfg)
        obs, tr, smi = eng.observer, eng.transport, cfg.gpu.nvidia_smi
        target, host_session, host_channel = runner(tr.run), runner(obs.host.run), runner(tr.run_host)
        await obs.refresh_procs()
        wait_for(lambda: len(lab.exec_in(210, "ls -l /proc/[0-9]*/fd | grep nvidia0").stdout.splitlines()) == 2, 20)

        async def before() -> gpu_probe.GPUSnapshot:
            return await gpu_probe.GpuProbe(smi).run(target, cfg.gpu.timeout)

        async def now(host: gpu_probe.Runner) -> gpu_probe.GPUSnapshot:
            return await gpu_probe.ProcessProbe(210).run(gpu_probe.GpuProbe(smi), target, host, cfg.gpu.timeout, obs.procs.procs)

        down = gpu_probe.ProcessProbe(210, host_down_until=time.monotonic() + 3600, host_note="bench")

        async def fallback() -> gpu_probe.GPUSnapshot:  # steady state: the scan rides in the GPU command
            return await down.run(gpu_probe.GpuProbe(smi), target, host_session, cfg.gpu.timeout, obs.procs.procs)

        ways = {"before: both queries in the container": before,
                "host query, host session (now)": lambda: now(host_session),
                "host query, a channel per refresh": lambda: now(host_channel),
                "fd scan fallback": fallback}
        times: dict[str, list[float]] = {k: [] for k in ways}
        seen: dict[str, str] = {}
        for fn in ways.values():
            await fn()  # warm: the sessions exist
        for _ in range(n):
            for name, fn in ways.items():
                t0 = time.perf_counter()
                snap = await fn()
                times[name].append(time.perf_counter() - t0)
                seen[name] = (f"{len(snap.processes)} processes"
                              + (f", container pids {sorted(p.container_pid for p in snap.processes)}" if snap.processes else "")
                              + (f" [{snap.method}]" if snap.method else ""))
        lab.exec_in(210, f"kill -9 -{job}; true")
        await eng.close()

    print(f"one GPU refresh of container 210 (a job with 2 ranks on GPU 0), n={n}; job pid {job} in the container")
    for name, xs in times.items():
        m, p90 = statistics.median(xs) * 1000, sorted(xs)[int(0.9 * len(xs))] * 1000
        print(f"{name:<40} median {m:8.1f} ms  p90 {p90:8.1f} ms   {seen[name]}")
    return {name: statistics.median(xs) * 1000 for name, xs in times.items()}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=30)
    asyncio.run(main(ap.parse_args().n))
