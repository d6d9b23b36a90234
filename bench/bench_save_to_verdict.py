"""From a save in the source to the verdict on screen, against the lab, split into cockpit's part
and the job's own start-up.

Runs ``cockpit watch --once --json`` (the headless attempt-on-save loop) on the lab's container
200 with the job simulator (start-up ``--start-delay`` seconds), saves a file in the deploy source,
and reads the verdict line.  Baseline in the same run: the job alone via ``pct exec``, timed to
its first ``step`` line.  Usage: ``python bench/bench_save_to_verdict.py [--n 3] [--start-delay 1]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_attempt import job_alone  # noqa: E402
from tests.lab import Lab  # noqa: E402


def main(n: int, delay: float) -> dict[str, float]:
    """Prints the figures; answers the medians in ms (save → verdict, the job alone)."""
    with Lab() as lab:
        lab.add_container(200)
        src = lab.dir / "src"
        src.mkdir(exist_ok=True)
        (src / "train.py").write_text("lr = 1e-3\n")
        tmp = Path(tempfile.mkdtemp())
        cfg = tmp / "cockpit.toml"
        cmd = lab.jobsim_command("--steps", "0", "--interval", "0.1", "--start-delay", str(delay))
        lab.write_config(cfg, job={"command": cmd})
        with open(cfg, "a") as fh:
            fh.write("\n[loop]\ndebounce = 1.0\nbell = false\ntmux = false\n")
        base = [job_alone(lab, cmd) for _ in range(n)]
        rows = []
        env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), XDG_CONFIG_HOME=str(tmp / "config"))
        for i in range(n):
            p = subprocess.Popen([sys.executable, "-m", "cockpit", "watch", "--once", "--json", "--note", f"try {i}",
                                  "--timeout", "60", "-c", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
            assert p.stderr is not None
            # wait until the watcher is armed (it says so on stderr), then save
            t_armed = time.monotonic()
            for line in p.stderr:
                if "watching" in line.lower() or time.monotonic() - t_armed > 10:
                    break
            t_save = time.monotonic()
            (src / "train.py").write_text(f"lr = {i + 2}e-3\n")
            out, _ = p.communicate(timeout=120)
            t_verdict = time.monotonic()
            d = json.loads(out.strip().splitlines()[-1])
            rows.append((t_verdict - t_save, d.get("save_to_start_s"), (d.get("timings") or {}).get("total"), d.get("outcome")))
        subprocess.run([sys.executable, "-m", "cockpit", "stop", "-c", str(cfg)], env=env, capture_output=True)
    job = statistics.median(base)
    total = statistics.median(r[0] for r in rows)
    print(f"save → verdict against lab container 200, job start-up {delay:g}s, debounce 1.0s, n={n} (outcomes: {[r[3] for r in rows]})")
    print(f"{'save → verdict line (wall clock)':<40} median {total * 1000:8.0f} ms")
    print(f"{'  save → attempt start (detect+debounce)':<40} median {statistics.median(r[1] for r in rows if r[1] is not None) * 1000:8.0f} ms")
    print(f"{'  attempt (connect → progress seen)':<40} median {statistics.median(r[2] for r in rows if r[2] is not None) * 1000:8.0f} ms")
    print(f"{'the job alone (pct exec → first step)':<40} median {job * 1000:8.0f} ms")
    print(f"{'cockpit part (total − job)':<40} median {(total - job) * 1000:8.0f} ms, of which the debounce is 1000 ms")
    return {"total": total * 1000, "job": job * 1000}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--start-delay", type=float, default=1.0)
    a = ap.parse_args()
    main(a.n, a.start_delay)
