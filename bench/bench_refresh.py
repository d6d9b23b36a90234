"""Time of one full observation refresh through the persistent session, against the lab.

A running job (the simulator, logging steps), a GPU (the emulator), and the observer's four
probes: process table, GPUs, log, host kernel messages.  Baseline, measured in the same run: the
same process-table, GPU and log probes each sent as a fresh ``ssh host pct exec 200 -- sh -c …``,
which is what checking by hand costs.  Also in the same run, what the refresh did before: the process
probe under the watchdog (``timeout`` + ``sh -c``) and the kernel log polled over a new channel
(now it follows one ``dmesg --follow``).  Usage: ``python bench/bench_refresh.py [--n 50]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.actions.base import ActionContext  # noqa: E402
from cockpit.core.actions.job import launch, stop  # noqa: E402
from cockpit.core.config import load_config
from cockpit.core.engine import Engine  # noqa: E402
from cockpit.core.probes import gpu as gpu_probe  # noqa: E402
from cockpit.core.probes import procs as procs_probe  # noqa: E402
from cockpit.core.probes.procs import PS_COMMAND  # noqa: E402
from tests.lab import Lab  # noqa: E402


def med_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


async def main(n: int, fresh_n: int | None = None) -> dict[str, float]:
    """Prints the figures; answers the medians in ms (\"baseline\" and one per part)."""
    with Lab() as lab:
        lab.add_container(200)
        lab.set_gpu_state("normal", gpus=[lab.gpu(0, **{"utilization.gpu": 95}), lab.gpu(1)])
        path = Path(tempfile.mkdtemp()) / "cockpit.toml"
        lab.write_config(path)
        cfg = load_config(path)
        eng = Engine(cfg)
        ctx = ActionContext(cfg, eng.transport)
        _, job = await launch(ctx, 1)
        eng.set_job(job)
        obs = eng.observer
        await obs.refresh_all()  # warm: connection, session, first log read, the kernel-log stream started
        from cockpit.core.probes import kmsg as kmsg_probe
        from tests.lab.util import await_for
        await await_for(lambda: obs.streams.kmsg is not None and obs.streams.kmsg.ready, 15, "the kernel-log stream")
        await await_for(lambda: obs.streams.gpu is not None and obs.streams.gpu.fresh() is not None, 15, "the GPU stream")

        async def gpu_polled() -> None:
            obs._gpu_full_at = None  # the full probe, as every refresh ran it before the stream (and every apps_interval now)
            await obs.refresh_gpu()

        async def ps_watched() -> None:
            procs_probe.parse_ps((await eng.transport.run(PS_COMMAND, timeout=10)).stdout)

        async def kmsg_polled() -> None:
            kmsg_probe.parse_kmsg((await eng.transport.run_host(kmsg_probe.kmsg_command(), timeout=15)).stdout)

        parts: dict[str, list[float]] = {"processes": [], "gpu": [], "log": [], "kernel": [], "full refresh": [],
                                         "before: processes, watched": [], "before: kernel, polled": [], "before: gpu, polled": []}
        for _ in range(n):
            for name, fn in (("processes", obs.refresh_procs), ("gpu", obs.refresh_gpu), ("log", obs.refresh_log), ("kernel", obs.refresh_kmsg),
                             ("before: processes, watched", ps_watched), ("before: kernel, polled", kmsg_polled),
                             ("before: gpu, polled", gpu_polled)):
                t0 = time.perf_counter()
                await fn()
                parts[name].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await obs.refresh_all()
            parts["full refresh"].append(time.perf_counter() - t0)
        assert obs.kmsg.mode == "follow", obs.kmsg.to_dict()
        assert obs.gpu.mode == "stream", obs.gpu.to_dict()
        procs = len(obs.procs.procs)
        lines = len(obs.log.follower.ring) if obs.log.follower else 0

        fresh = []
        log_cmd = obs.log.follower.command() if obs.log.follower else "true"
        for _ in range(fresh_n or max(5, n // 5)):
            t0 = time.perf_counter()
            for cmd in (PS_COMMAND, gpu_probe.gpu_query_command(cfg.gpu.nvidia_smi, 5), log_cmd):
                subprocess.run(lab.ssh_argv(f"pct exec 200 -- /bin/sh -c {__import__('shlex').quote(cmd)}"),
                               stdin=subprocess.DEVNULL, capture_output=True, check=False)
            fresh.append(time.perf_counter() - t0)
        await stop(ctx, job)
        await eng.close()

    base = med_ms(fresh)
    print(f"observation refresh against lab container 200 ({procs} processes, {lines} log lines kept, n={n})")
    print(f"{'baseline: 3 probes as fresh ssh … pct exec':<46} median {base:9.2f} ms")
    out = {"baseline": base}
    for name, xs in parts.items():
        m = out[name] = med_ms(xs)
        extra = f"   {base / m:6.1f}x faster than baseline" if name == "full refresh" else ""
        print(f"{name:<46} median {m:9.2f} ms  p90 {sorted(xs)[int(0.9 * len(xs))] * 1000:8.2f} ms{extra}")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    asyncio.run(main(ap.parse_args().n))
