"""What cockpit adds to a Slurm attempt beyond ``sbatch`` and the job, side by side, against the lab.

Each round runs the same job twice on the same one-node cluster, alternating: by hand (``sbatch``,
then a loop that reads the log every ``--poll`` seconds for the first ``step`` line, as a person's
``sleep``/``grep`` would, only faster) and through ``Engine.attempt()`` with ``runtime = "slurm"``
(the verify stage "progress" is the moment cockpit saw the first step).  Slurm's scheduling delay
(a scheduler cycle; ``SubmitTime``/``StartTime`` in whole seconds) varies by more than cockpit's
own cost, so every run is cut into parts measured on one clock (everything runs on this machine):

    pre     observer's start → ``sbatch`` starts   (cockpit: the launch stage start: writing the batch
            script over SSH, the SSH round trip of the sbatch command; by hand: a fork)
    sbatch  ``sbatch``'s own run (the lab's ``sbatch`` wrapper stamps it, for both)
    slurm   ``sbatch`` returned → the job's first line (its ``time.time()`` at start): the scheduler's
            queue delay, slurmd's launch and Python's start-up.  ``queue`` is Slurm's own view of it,
            ``StartTime - SubmitTime`` from ``scontrol show job -o`` (whole seconds)
    job     the job's own start → its first step line (both stamped by the job)
    seen    the step line written → the observer saw it (by hand: the poll; cockpit: the verify loop's
            first reading with the marker, ``_Watch.progress_at``; its reads go over SSH at an interval
            that grows from 50 ms to 500 ms while the job queues, so it is often at 500 ms by then)

``pre + seen`` is what the observer adds beyond ``sbatch``, Slurm and the job; cockpit's added
time is that minus the same for the by-hand loop (medians).  The whole attempt (connect, deploy,
clear-cache, stop, launch, verify with the settle window) is broken down apart.

Usage: ``python bench/bench_slurm.py [--n 5] [--quick]`` (root; needs slurm-wlm and munge installed)
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.actions import verify as verify_mod  # noqa: E402
from cockpit.core.config import load_config
from cockpit.core.engine import Engine  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.slurm import PARTITION, SlurmLab, slurm_unavailable_reason  # noqa: E402

#: the job: stamps its start, "works" a moment, then prints a stamped step line every 0.1 s
JOB = """\
import sys, time
print(f"bench-start {time.time():.6f}", flush=True)
time.sleep(float(sys.argv[1]))
n = 0
while True:
    print(f"step {n} t={time.time():.6f}", flush=True)
    n += 1
    time.sleep(0.1)
"""

PARTS = ("pre", "sbatch", "slurm", "job", "seen")

#: when verify's waiting loop first saw the progress marker (``_Watch.progress_at``, wall clock):
#: verify names its stages only when it stops waiting, after the settle window, so the stage times
#: cannot say it; the bench wraps the loop's bookkeeping (no behaviour changes) to read it
PROGRESS_AT: list[float] = []
_note = verify_mod._Watch.note


def _noting(self: Any, *args: Any, **kw: Any) -> None:
    before = self.progress_at
    _note(self, *args, **kw)
    if before is None and self.progress_at is not None:
        PROGRESS_AT.append(self.progress_at)


verify_mod._Watch.note = _noting  # type: ignore[method-assign]


def stamp_wrapper(slurm: SlurmLab, stamps: Path) -> str:
    """An ``sbatch`` that appends "start end" (epoch seconds) of the real one to ``stamps``."""
    q = shlex.quote
    return (f"#!/bin/sh\nSLURM_CONF={q(str(slurm.conf))}; export SLURM_CONF\n"
            f"t0=$(date +%s.%N)\n/usr/bin/sbatch \"$@\"\nrc=$?\n"
            f"echo \"$t0 $(date +%s.%N)\" >> {q(str(stamps))}\nexit $rc\n")


def last_stamp(stamps: Path) -> tuple[float, float]:
    a, b = stamps.read_text().split("\n")[-2].split()
    return float(a), float(b)


def job_stamps(log: Path) -> tuple[float, float]:
    """(job start, first step line) from the job's own clock, read from its log."""
    start = step = None
    for line in log.read_text().splitlines():
        if line.startswith("bench-start ") and start is None:
            start = float(line.split()[1])
        elif line.startswith("step ") and step is None:
            step = float(line.rsplit("t=", 1)[1])
    assert start is not None and step is not None, log.read_text()[:500]
    return start, step


def _epoch(s: str) -> float:
    return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%S"))


def queue_s(slurm: SlurmLab, jid: str) -> float:
    """Slurm's own queue delay: ``StartTime - SubmitTime`` (``scontrol show job -o``, whole seconds)."""
    f = {k: v for k, _, v in (w.partition("=") for w in slurm.run("/usr/bin/scontrol", "show", "job", "-o", jid).stdout.split())}
    return _epoch(f["StartTime"]) - _epoch(f["SubmitTime"])


def parts(t0: float, pre: float, post: float, start: float, step: float, seen: float) -> dict[str, float]:
    return {"pre": pre - t0, "sbatch": post - pre, "slurm": start - post, "job": step - start, "seen": seen - step, "total": seen - t0}


def by_hand(slurm: SlurmLab, sbatch: Path, stamps: Path, cmd: str, log: Path, poll: float) -> dict[str, float]:
    t0 = time.time()
    r = subprocess.run([str(sbatch), "--parsable", f"--chdir={slurm.work}", f"--output={log}", "--wrap", cmd],
                       capture_output=True, text=True, check=True, timeout=30)
    jid = r.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 60
    while b"\nstep " not in (log.read_bytes() if log.exists() else b""):
        if time.monotonic() > deadline:
            sys.exit(f"plain job {jid}: no step line in 60 s")
        time.sleep(poll)
    seen = time.time()
    pre, post = last_stamp(stamps)
    out = parts(t0, pre, post, *job_stamps(log), seen)
    out["queue"] = queue_s(slurm, jid)
    slurm.run("/usr/bin/scancel", jid)
    slurm.reset()
    return out


async def with_cockpit(cfg_path: Path, slurm: SlurmLab, stamps: Path) -> dict[str, float]:
    PROGRESS_AT.clear()
    eng = Engine(load_config(cfg_path))
    try:
        res = await eng.attempt("bench", wait=True, follow=False)
        assert res.outcome.value == "passed", res.verdict.summary()
        stages = res.verdict.stages
        t0 = next(s.started_at for s in stages if s.name.startswith("launch"))
        assert len(PROGRESS_AT) == 1, PROGRESS_AT
        seen = PROGRESS_AT.pop()
        pre, post = last_stamp(stamps)
        assert res.job is not None and res.job.sched_id
        out = parts(t0, pre, post, *job_stamps(Path(res.job.log_path)), seen)
        out["queue"] = queue_s(slurm, res.job.sched_id)
        out.update({f"a:{k}": v for k, v in res.timings.items()})
        t = time.monotonic()
        await eng.run_action("stop")
        out["a:stop after"] = time.monotonic() - t
        return out
    finally:
        await eng.close()


def med(rows: list[dict[str, float]], k: str) -> float:
    return statistics.median(r[k] for r in rows)


def report(plain: list[dict[str, float]], ck: list[dict[str, float]], poll: float, settle: float) -> None:
    cols = (*PARTS, "total", "queue")
    print(f"per run (seconds; by hand polls the log every {poll * 1000:.0f} ms; queue = Slurm's StartTime-SubmitTime, whole s)")
    print(f"{'run':<10}" + "".join(f"{c:>8}" for c in cols) + f"{'added':>8}")
    for name, rows in (("by hand", plain), ("cockpit", ck)):
        for i, r in enumerate(rows):
            print(f"{name + ' ' + str(i + 1):<10}" + "".join(f"{r[c]:8.3f}" for c in cols) + f"{r['pre'] + r['seen']:8.3f}")
    print("medians")
    for name, rows in (("by hand", plain), ("cockpit", ck)):
        print(f"{name:<10}" + "".join(f"{med(rows, c):8.3f}" for c in cols) + f"{statistics.median(r['pre'] + r['seen'] for r in rows):8.3f}")
    added_plain = statistics.median(r["pre"] + r["seen"] for r in plain)
    added_ck = statistics.median(r["pre"] + r["seen"] for r in ck)
    print(f"\ncockpit adds beyond sbatch, Slurm and the job (pre + seen, median): {added_ck:.3f}s "
          f"(by hand: {added_plain:.3f}s) → {added_ck - added_plain:+.3f}s more than the by-hand loop")
    print(f"  of which before sbatch (script over SSH, sbatch's SSH round trip): {med(ck, 'pre') - med(plain, 'pre'):+.3f}s; "
          f"seeing the step line: {med(ck, 'seen') - med(plain, 'seen'):+.3f}s")
    print(f"  raw totals (submit → first step seen), scheduler noise included: by hand {med(plain, 'total'):.2f}s, "
          f"cockpit {med(ck, 'total'):.2f}s")
    keys = ["connect", "deploy", "stop", "clear-cache", "launch", "verify", "total"]
    print(f"\nthe whole cockpit attempt (median s; verify includes Slurm's queue, the job's start and the settle window of {settle:g}s):")
    print("  " + ", ".join(f"{k} {med(ck, 'a:' + k):.3f}" for k in keys if all('a:' + k in r for r in ck))
          + f"; then stop (scancel, confirmed) {med(ck, 'a:stop after'):.3f}")


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Prints the figures; answers the medians in ms of the time added beyond sbatch, Slurm and the job."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5, help="runs of each kind (alternating)")
    ap.add_argument("--quick", action="store_true", help="n=2, settle 1 s")
    ap.add_argument("--poll", type=float, default=0.01, help="the by-hand loop's poll interval (s)")
    ap.add_argument("--work", type=float, default=0.3, help="the job's seconds from its start to its first step")
    ap.add_argument("--settle", type=float, default=10.0, help="cockpit's [verify] settle (the default is 10)")
    a = ap.parse_args(argv)
    n, settle = (2, 1.0) if a.quick else (a.n, a.settle)
    why = slurm_unavailable_reason(install=False)
    if why:
        raise RuntimeError(f"cannot run: {why}")
    with Lab() as lab:
        slurm = SlurmLab().start()
        wrappers = slurm.install_wrappers(lab.bin_dir)
        stamps = slurm.dir / "sbatch-stamps"
        for b in (lab.bin_dir / "sbatch", slurm.bin_dir / "sbatch"):
            b.write_text(stamp_wrapper(slurm, stamps))
        try:
            job = slurm.work / "benchjob.py"
            job.write_text(JOB)
            cmd = shlex.join([sys.executable, "-u", str(job), str(a.work)])
            tmp = Path(tempfile.mkdtemp())
            (slurm.work / "src").mkdir(exist_ok=True)
            (slurm.work / "src" / "train.py").write_text("print(1)\n")
            cfg = lab.write_config(tmp / "c.toml", target={"runtime": "slurm", "container": None},
                                   job={"workdir": str(slurm.work), "log": f"{slurm.work}/t-{{attempt}}.log", "command": cmd},
                                   deploy={"source": str(slurm.work / "src"), "dest": str(slurm.work / "dep")},
                                   cache={"paths": [str(slurm.work / "cache")]}, gpu=None, verify={"settle": settle},
                                   slurm={"partition": PARTITION})
            plain: list[dict[str, Any]] = []
            ck: list[dict[str, Any]] = []
            for i in range(n):
                plain.append(by_hand(slurm, slurm.bin_dir / "sbatch", stamps, cmd, slurm.work / f"raw-{i}.log", a.poll))
                ck.append(asyncio.run(with_cockpit(cfg, slurm, stamps)))
                slurm.reset()
            report(plain, ck, a.poll, settle)
            return {"by_hand": statistics.median(r["pre"] + r["seen"] for r in plain) * 1000,
                    "cockpit": statistics.median(r["pre"] + r["seen"] for r in ck) * 1000}
        finally:
            for w in wrappers:
                w.unlink(missing_ok=True)
            slurm.close()


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(str(e))
