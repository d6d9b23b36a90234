"""What one full attempt costs beyond the job's own start-up, against the lab.

Baseline (same run): the job itself, started directly with ``pct exec 200 -- …`` on the lab host,
timed from the call to its first ``step`` line.  Then ``Engine.attempt()`` with the same job:
connect, deploy (a small source tree), clear caches, stop the previous job, launch, verify until the
progress marker.  cockpit's own cost is the attempt's total minus the baseline.

Usage: ``python bench/bench_attempt.py [--n 5] [--start-delay 1.0]``
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

from cockpit.core.config import load_config
from cockpit.core.engine import Engine  # noqa: E402
from tests.lab import Lab  # noqa: E402


def job_alone(lab: Lab, cmd: str) -> float:
    t0 = time.perf_counter()
    p = subprocess.Popen(["pct", "exec", "200", "--", "/bin/sh", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env={"PATH": lab.path_env})
    assert p.stdout is not None
    for line in p.stdout:
        if line.startswith(b"step "):
            break
    dt = time.perf_counter() - t0
    p.kill()
    p.wait()
    return dt


async def main(n: int, delay: float) -> dict[str, float]:
    """Prints the figures; answers the medians in ms (job alone, attempt, and each part)."""
    with Lab() as lab:
        lab.add_container(200)
        src = lab.dir / "src"
        src.mkdir(exist_ok=True)
        for i in range(20):
            (src / f"module_{i}.py").write_text(f"# module {i}\n" + "x = 1\n" * 200)
        path = Path(tempfile.mkdtemp()) / "cockpit.toml"
        cmd = lab.jobsim_command("--steps", "0", "--interval", "0.1", "--start-delay", str(delay))
        lab.write_config(path, job={"command": cmd})
        cfg = load_config(path)
        base = [job_alone(lab, cmd) for _ in range(n)]
        eng = Engine(cfg)
        totals, parts = [], []
        for i in range(n):
            res = await eng.attempt(f"bench {i}")
            assert res.outcome.value == "passed", res.verdict.summary()
            totals.append(res.timings["total"])
            parts.append(res.timings)
        await eng.run_action("stop")
        await eng.close()
    b, t = statistics.median(base), statistics.median(totals)
    print(f"one attempt against lab container 200, job start-up {delay:g}s, 20-file source, n={n}")
    print(f"{'job alone (pct exec → first step line)':<44} median {b * 1000:8.1f} ms")
    print(f"{'cockpit attempt (connect → progress seen)':<44} median {t * 1000:8.1f} ms")
    print(f"{'cockpit adds':<44} median {(t - b) * 1000:8.1f} ms  ({t / b:.2f}x the job's own start-up)")
    out = {"job": b * 1000, "attempt": t * 1000}
    for k in ("connect", "deploy", "clear-cache", "stop", "launch", "verify"):
        out[k] = statistics.median(p.get(k, 0.0) for p in parts) * 1000
        print(f"  {k:<42} median {out[k]:8.1f} ms")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--start-delay", type=float, default=1.0)
    a = ap.parse_args()
    asyncio.run(main(a.n, a.start_delay))
