"""From the job's fatal line to cockpit's record of it, against the lab (issue 9).

Two cases, ``--n`` runs each, at the default intervals (verify's own polling, ``[verify]
fate_interval`` default); the settle window is set to ``--settle`` and reported separately, since a
failure inside it does not wait for it:

* **verdict**: drafter threads die with the FX error while the main loop goes on printing steps (the
  seed's bug): the time from the first thread's fatal write to the attempt's ``attempt_finished``
  record in the journal;
* **fate**: a job that passed dies later with a traceback: the time from its fatal write to the
  ``fate`` record (``died``), with the engine following the job as the TUI does.

The job writes the wall-clock time of its fatal event to a mark file (``jobsim --mark-file``); lab
and cockpit share the clock.  Baseline (same run): one probe of the job's state through the
persistent session, the floor of any detection.

Usage: ``python bench/bench_fate.py [--n 20] [--settle 1]``
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

from cockpit.core.actions.jobstate import state_command  # noqa: E402
from cockpit.core.config import load_config
from cockpit.core.engine import Engine  # noqa: E402
from cockpit.core.fate import FATE_EVENT  # noqa: E402
from cockpit.core.journal import Journal  # noqa: E402
from tests.lab import Lab  # noqa: E402


def _mark(lab: Lab, path: str) -> float | None:
    out = lab.exec_in(200, f"cat {path} 2>/dev/null").stdout.strip()
    return float(out) if out else None


def _event_ts(journal: Journal, attempt: int, kind: str, state: str | None = None) -> float | None:
    rec = journal.get(attempt)
    for ev in rec.events if rec is not None else []:
        if ev.get("event") == kind and (state is None or ev.get("state") == state):
            return float(ev["ts"])
    return None


async def main(n: int, settle: float) -> dict[str, float]:
    """Prints the figures; answers the medians in ms (probe, verdict, fate)."""
    with Lab() as lab:
        lab.add_container(200)
        (lab.dir / "src").mkdir(exist_ok=True)
        (lab.dir / "src" / "train.py").write_text("print('the code under test')\n")
        ws = lab.workspace()
        path = Path(tempfile.mkdtemp()) / "cockpit.toml"
        mark = f"{ws}/fatal.mark"
        verdict_lat: list[float] = []
        fate_lat: list[float] = []
        probes: list[float] = []
        fx = lab.jobsim_command("--steps", "0", "--interval", "0.1", "--threads", "3", "--crash", "fx", "--crash-at", "5",
                                "--keep-stepping", "-1", "--mark-file", mark)
        lab.write_config(path, job={"command": fx}, verify={"settle": settle, "fate_interval": None})
        cfg = load_config(path)
        eng = Engine(cfg)
        for i in range(n):
            lab.exec_in(200, f"rm -f {mark}")
            res = await eng.attempt(f"fx {i}", follow=False)
            assert res.outcome.value == "failed", res.verdict.summary()
            t_mark = _mark(lab, mark)
            t_rec = _event_ts(eng.journal, res.attempt, "attempt_finished")
            assert t_mark is not None and t_rec is not None
            verdict_lat.append(t_rec - t_mark)
        job = eng.job
        assert job is not None
        for _ in range(50):
            t0 = time.perf_counter()
            await eng.transport.run(state_command(job, -4096), timeout=10)
            probes.append(time.perf_counter() - t0)
        await eng.run_action("stop")
        await eng.close()

        late = lab.jobsim_command("--steps", "0", "--interval", "0.1", "--crash", "exc", "--crash-at", str(int(settle * 10) + 25),
                                  "--mark-file", mark)
        lab.write_config(path, job={"command": late}, verify={"settle": settle, "fate_interval": None})
        cfg = load_config(path)
        eng = Engine(cfg)
        for i in range(n):
            lab.exec_in(200, f"rm -f {mark}")
            res = await eng.attempt(f"late {i}")
            assert res.outcome.value == "passed", res.verdict.summary()
            deadline = time.monotonic() + 30
            while _event_ts(eng.journal, res.attempt, FATE_EVENT, "died") is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            t_rec = _event_ts(eng.journal, res.attempt, FATE_EVENT, "died")
            t_mark = _mark(lab, mark)
            assert t_mark is not None and t_rec is not None, "the fate was not recorded"
            fate_lat.append(t_rec - t_mark)
        await eng.close()
    fi = cfg.verify.fate_interval
    p = statistics.median(probes)
    print(f"fatal line → record, lab container 200, n={n}, settle {settle:g}s (reported apart), fate_interval {fi:g}s (default)")
    print(f"{'baseline: one job-state probe (session)':<46} median {p * 1000:8.1f} ms")
    for name, xs in (("verdict (threads die, process lives)", verdict_lat), ("fate (passed, then died)", fate_lat)):
        med = statistics.median(xs)
        print(f"{name:<46} median {med * 1000:8.1f} ms  max {max(xs) * 1000:8.1f} ms  ({med / p:.0f}x one probe)")
    print(f"{'settle window (a healthy job waits this long)':<46} {settle * 1000:8.1f} ms")
    return {"probe": p * 1000, "verdict": statistics.median(verdict_lat) * 1000, "fate": statistics.median(fate_lat) * 1000}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--settle", type=float, default=1.0)
    a = ap.parse_args()
    asyncio.run(main(a.n, a.settle))
