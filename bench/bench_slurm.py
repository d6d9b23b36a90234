"""What cockpit adds to a Slurm attempt beyond ``sbatch`` and the job, side by side, against the lab.

Baseline (same run, same cluster): ``sbatch`` of the same job by hand, timed from the call to the
first ``step`` line in its output file (the scheduler's start-up and the job's own).  Then
``Engine.attempt()`` with ``runtime = "slurm"``: launch (write the script, ``sbatch``, one
``scontrol``) + verify until the progress marker (the settle window is set to 0 here so the
verdict is the first moment cockpit could say "progressing").  cockpit's cost = that minus the
baseline; connect/deploy/clear-cache are reported apart (they are not Slurm's).

Usage: ``python bench/bench_slurm.py [--n 3]`` (root; installs nothing: needs slurm-wlm and munge)
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

from cockpit.config import load_config  # noqa: E402
from cockpit.core.engine import Engine  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.slurm import PARTITION, SlurmLab, slurm_unavailable_reason  # noqa: E402


def by_hand(slurm: SlurmLab, cmd: str, log: Path) -> float:
    t0 = time.perf_counter()
    jid = slurm.sbatch(f"--output={log}", "--wrap", cmd)
    while b"step " not in (log.read_bytes() if log.exists() else b""):
        time.sleep(0.01)
    dt = time.perf_counter() - t0
    slurm.run("/usr/bin/scancel", jid)
    slurm.reset()
    return dt


async def with_cockpit(cfg_path: Path) -> tuple[float, dict[str, float]]:
    eng = Engine(load_config(cfg_path))
    try:
        res = await eng.attempt("bench", wait=True, follow=False)
        assert res.outcome.value == "passed", res.verdict.summary()
        await eng.run_action("stop")
        return res.timings["launch"] + res.timings["verify"], res.timings
    finally:
        await eng.close()


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Prints the figures; answers the medians in ms (sbatch by hand, cockpit launch + verify)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3)
    n = ap.parse_args(argv).n
    why = slurm_unavailable_reason(install=False)
    if why:
        raise RuntimeError(f"cannot run: {why}")
    with Lab() as lab:
        slurm = SlurmLab().start()
        wrappers = slurm.install_wrappers(lab.bin_dir)
        try:
            cmd = lab.jobsim_command("--steps", 0, "--interval", 0.05)
            raw = [by_hand(slurm, cmd, slurm.work / f"raw-{i}.log") for i in range(n)]
            tmp = Path(tempfile.mkdtemp())
            (slurm.work / "src").mkdir(exist_ok=True)
            (slurm.work / "src" / "train.py").write_text("print(1)\n")
            cfg = lab.write_config(tmp / "c.toml", target={"runtime": "slurm", "container": None},
                                   job={"workdir": str(slurm.work), "log": f"{slurm.work}/t-{{attempt}}.log", "command": cmd},
                                   deploy={"source": str(slurm.work / "src"), "dest": str(slurm.work / "dep")},
                                   cache={"paths": [str(slurm.work / "cache")]}, gpu=None, verify={"settle": 0.0},
                                   slurm={"partition": PARTITION})
            runs = []
            for _ in range(n):
                runs.append(asyncio.run(with_cockpit(cfg)))
                slurm.reset()
            ck = [r[0] for r in runs]
            print(f"sbatch by hand → first step line: median {statistics.median(raw):.2f}s  ({', '.join(f'{x:.2f}' for x in raw)})")
            print(f"cockpit launch + verify → progress: median {statistics.median(ck):.2f}s  ({', '.join(f'{x:.2f}' for x in ck)})")
            print(f"cockpit adds: {statistics.median(ck) - statistics.median(raw):+.2f}s (median difference)")
            print("rest of the attempt (not Slurm's): " + ", ".join(f"{k} {statistics.median(r[1][k] for r in runs):.2f}s"
                                                                 for k in ("connect", "deploy", "clear-cache", "stop")))
            return {"by_hand": statistics.median(raw) * 1000, "cockpit": statistics.median(ck) * 1000}
        finally:
            for w in wrappers:
                w.unlink(missing_ok=True)
            slurm.close()


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(str(e))
