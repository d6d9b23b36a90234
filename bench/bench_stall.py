"""Stall detection against the lab (issue 16): how late, and how often wrong.

* **latency**: a job deadlocks (two threads, two locks) after some progress; from its last
  progress (the job writes the time it started to hang to a mark file) to the ``stalled`` fate in
  the journal, with ``[verify] stall_after = --stall-after``.  The figure that matters is the
  overhead beyond the threshold itself; the baseline is the threshold.
* **false positives**: a healthy job with irregular steps (``--interval`` plus up to ``--jitter``
  seconds each, and a silent evaluation of ``--eval-seconds`` every 40 steps) followed for
  ``--seconds``, once with ``stall_after = "auto"`` and once with a fixed threshold just above the
  evaluation; every ``stalled`` transition counted.

Usage: ``python bench/bench_stall.py [--n 5] [--seconds 120]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.config import load_config
from cockpit.core.engine import Engine  # noqa: E402
from cockpit.core.fate import FATE_EVENT  # noqa: E402
from tests.lab import Lab  # noqa: E402


def _states(eng: Engine, attempt: int) -> list[tuple[str, float]]:
    rec = eng.journal.get(attempt)
    return [(str(ev.get("state")), float(ev["ts"])) for ev in (rec.events if rec else []) if ev.get("event") == FATE_EVENT]


async def latency(lab: Lab, path: Path, n: int, stall_after: float) -> list[float]:
    ws = lab.workspace()
    mark = f"{ws}/hang.mark"
    cmd = lab.jobsim_command("--steps", "0", "--interval", "0.1", "--hang", "deadlock", "--hang-at", "30", "--mark-file", mark)
    lab.write_config(path, job={"command": cmd}, verify={"settle": 1, "stall_after": stall_after, "fate_interval": None})
    eng = Engine(load_config(path))
    out = []
    for i in range(n):
        lab.exec_in(200, f"rm -f {mark}")
        res = await eng.attempt(f"deadlock {i}")
        assert res.outcome.value == "passed", res.verdict.summary()
        deadline = time.monotonic() + stall_after + 30
        while not any(s == "stalled" for s, _ in _states(eng, res.attempt)) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        t_rec = next(t for s, t in _states(eng, res.attempt) if s == "stalled")
        t_mark = float(lab.exec_in(200, f"cat {mark}").stdout)
        out.append(t_rec - t_mark)
    await eng.run_action("stop")
    await eng.close()
    return out


async def false_positives(lab: Lab, path: Path, seconds: float, jitter: float, eval_s: float, setting: float | str) -> tuple[int, int]:
    cmd = lab.jobsim_command("--steps", "0", "--interval", "0.05", "--jitter", str(jitter), "--eval-every", "40",
                             "--eval-seconds", str(eval_s))
    lab.write_config(path, job={"command": cmd}, verify={"settle": 1, "stall_after": setting, "fate_interval": None})
    eng = Engine(load_config(path))
    res = await eng.attempt(f"healthy, stall_after={setting}")
    assert res.outcome.value == "passed", res.verdict.summary()
    await asyncio.sleep(seconds)  # the benchmark's duration itself: the follower runs meanwhile
    stalls = sum(1 for s, _ in _states(eng, res.attempt) if s == "stalled")
    steps = int(lab.exec_in(200, f"grep -c '^step' {res.job.log_path}").stdout or 0) if res.job else 0
    await eng.run_action("stop")
    await eng.close()
    return stalls, steps


async def main(n: int, seconds: float, stall_after: float) -> dict[str, float]:
    """Prints the figures; answers the latency median in ms and the false stalls (none measured when ``seconds`` is 0)."""
    with Lab() as lab:
        lab.add_container(200)
        (lab.dir / "src").mkdir(exist_ok=True)
        (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
        path = Path(tempfile.mkdtemp()) / "cockpit.toml"
        lat = await latency(lab, path, n, stall_after)
        fp_auto = await false_positives(lab, path, seconds, 0.4, 3.0, "auto") if seconds > 0 else None
        fp_fixed = await false_positives(lab, path, seconds, 0.4, 3.0, 4.0) if seconds > 0 else None
    med = statistics.median(lat)
    print(f"stall detection against lab container 200 (fate_interval default), n={n}")
    print(f"{'baseline: the threshold (stall_after)':<52} {stall_after * 1000:8.0f} ms")
    print(f"{'deadlock → stalled recorded':<52} median {med * 1000:8.0f} ms  max {max(lat) * 1000:8.0f} ms"
          f"  (+{(med - stall_after) * 1000:.0f} ms over the threshold)")
    out = {"threshold": stall_after * 1000, "latency": med * 1000}
    if fp_auto is None or fp_fixed is None:
        return out
    print(f"healthy job, steps 0.05–0.45 s, a silent 3 s evaluation every 40 steps, {seconds:g} s each:")
    print(f"{'  stall_after = auto: stalled transitions':<52} {fp_auto[0]} over {fp_auto[1]} steps")
    print(f"{'  stall_after = 4 s: stalled transitions':<52} {fp_fixed[0]} over {fp_fixed[1]} steps")
    return {**out, "false_auto": fp_auto[0], "false_fixed": fp_fixed[0], "seconds": seconds}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--stall-after", type=float, default=5.0)
    a = ap.parse_args()
    asyncio.run(main(a.n, a.seconds, a.stall_after))
