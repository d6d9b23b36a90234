"""What one full attempt costs beyond the job's own start-up and the settle window, against the lab.

Baseline (same run, before each round): the job itself, started directly with ``pct exec 200 -- …``
on the lab host, timed from the call to its first ``step`` line.  Then ``Engine.attempt()`` with the
same job: connect, deploy (a small source tree), stop the previous job (+ strays), clear caches,
launch, verify until the progress marker and through the settle window (``[verify] settle``).

``Engine.attempt`` also takes the target lock before and reads the first fate after the attempt's
own total: shown apart ("+ Engine.attempt around it"), not in cockpit's share.

"between the stages" is the attempt's total less its stages' own times: what runs between them in
cockpit itself (journal writes, events, listeners, the code version read at the start).

Each round is a **cold** attempt (a fresh Engine: a new SSH connection, nothing cached) followed by
``--warm`` **warm** attempts on the same engine (its connection kept).  cockpit's own share of an
attempt = its total − the round's job-alone baseline − the settle window.

Usage: ``python bench/bench_attempt.py [--n 5] [--warm 2] [--start-delay 1.0] [--settle 1.0] [--trace] [--history N]``;
``--trace`` prints each attempt's stages and every call to the target in time order (what goes
through the session, in one batch, or on a channel of its own), verify's job-state reads summed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.config import load_config  # noqa: E402
from cockpit.core.engine import Engine  # noqa: E402
from cockpit.core.remote.hostsession import HostSession  # noqa: E402
from cockpit.core.remote.ssh import SSHTransport  # noqa: E402
from tests.lab import Lab  # noqa: E402

PARTS = ("connect", "deploy", "stop", "clear-cache", "launch", "verify", "compile cache")


#: round trips to the target (a command through the session, a pipelined batch, a host command, a channel)
TRIPS = [0]


#: with --trace: (wall time, seconds, kind, command) of every call to the target in the current attempt
CALLS: list[tuple[float, float, str, str]] = []
KINDS = {"run": "session", "run_many": "batch", "run_host": "host channel", "run_channel": "channel", "host.run": "host shell"}


def _count_trips(trace: bool = False) -> None:
    """Counts the transport's round trips (load-independent: what each change saves); ``trace``
    keeps each call (kind, start, duration, command) for :func:`print_trace`."""
    for cls, name in [(SSHTransport, "run"), (SSHTransport, "run_many"), (SSHTransport, "run_host"),
                      (SSHTransport, "run_channel"), (HostSession, "host.run")]:
        orig = getattr(cls, name.removeprefix("host."))

        async def counted(self: object, *a: object, _orig: object = orig, _kind: str = KINDS[name], **kw: object) -> object:
            TRIPS[0] += 1
            t0, w0 = time.perf_counter(), time.time()
            try:
                return await _orig(self, *a, **kw)  # type: ignore[operator]
            finally:
                if trace:
                    cmd = a[0] if a else kw.get("command", kw.get("commands", ""))
                    text = " ;; ".join(c[:50] for c in cmd) if isinstance(cmd, list) else str(cmd)
                    cheap = kw.get("cheap")
                    mode = (" (" + "".join("c" if c else "w" for c in cheap) + ")" if isinstance(cheap, list)
                            else " cheap" if cheap else "")
                    kind = "job-state" if "@@stat" in text else _kind + mode
                    CALLS.append((w0, time.perf_counter() - t0, kind, text.replace("\n", " ")[:110]))

        setattr(cls, name.removeprefix("host."), counted)


def print_trace(label: str, res: object, t0: float) -> None:
    """The attempt's stages and its calls to the target, in time order (ms from the attempt's start);
    verify's job-state reads after the spawn are summed, not listed."""
    stages = [st for st in res.verdict.stages if not st.name.startswith("verify")]  # type: ignore[attr-defined]
    spawned = max(((st.started_at or t0) + (st.duration_s or 0) for st in stages), default=t0)
    rows = [(st.started_at or t0, f"stage {st.name} ({st.status.value}, {1000 * (st.duration_s or 0):.1f} ms)") for st in stages]
    rows += [(w, f"  {1000 * d:7.1f} ms {kind:<14} {cmd}") for w, d, kind, cmd in CALLS if kind != "job-state" or w < spawned]
    polls = [d for w, d, kind, _c in CALLS if kind == "job-state" and w >= spawned]
    print(f"--- {label}")
    for w, text in sorted(rows, key=lambda r: r[0]):
        print(f"{1000 * (w - t0):8.1f}  {text}")
    if polls:
        print(f"          then {len(polls)} job-state reads (verify's polls, the first fate): median {1000 * statistics.median(polls):.1f} ms")


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


def _row(label: str, values: list[float]) -> str:
    return f"  {label:<34} {statistics.median(values):8.1f} ms  (min {min(values):7.1f}, max {max(values):7.1f})"


def report(kind: str, rows: list[dict[str, float]], settle_ms: float) -> dict[str, float]:
    """Prints the medians of one kind (cold or warm) and answers them."""
    out: dict[str, float] = {}
    print(f"{kind} (n={len(rows)})")
    for k in ("job", "attempt", *PARTS, "between", "share", "engine"):
        vals = [r[k] for r in rows]
        out[k] = statistics.median(vals)
        label = {"job": "job alone (baseline)", "attempt": "attempt total (run_attempt)",
                 "between": "between the stages", "engine": "+ Engine.attempt around it"}.get(k, k)
        if k == "share":
            label = f"cockpit's share (total-job-{settle_ms:g})"
        print(_row(label, vals))
    trips = [r["trips"] for r in rows]
    out["trips"] = statistics.median(trips)
    print(f"  {'round trips to the target':<34} {out['trips']:8.0f}     (min {min(trips):7.0f}, max {max(trips):7.0f}; "
          "verify's polls included)")
    return out


def fill_journal(cfg: object, attempts: int) -> None:
    """``attempts`` closed attempts of 45 stages each in the config's journal: a journal with a history."""
    from cockpit.core.journal import Journal  # noqa: PLC0415
    from cockpit.core.layers import Layer, Outcome, Stage, Status  # noqa: PLC0415

    j = Journal(cfg.journal_path)  # type: ignore[attr-defined]
    for k in range(attempts):
        a = j.start_attempt(f"history {k}", "bench")
        for i in range(45):
            j.record_stage(a, "attempt", Stage(f"stage {i}", Status.OK, Layer.CONTAINER, "a detail of some length " * 3))
        j.finish_attempt(a, Outcome.PASSED)


async def main(n: int, delay: float, warm: int = 2, settle: float = 1.0, trace: bool = False, history: int = 0) -> dict[str, float]:
    """Prints the figures; answers the medians in ms: ``job`` and ``attempt`` (warm attempts' total,
    the cold ones' without warm ones), and ``cold_KEY`` / ``warm_KEY`` for every figure printed."""
    with Lab() as lab:
        lab.add_container(200)
        src = lab.dir / "src"
        src.mkdir(exist_ok=True)
        for i in range(20):
            (src / f"module_{i}.py").write_text(f"# module {i}\n" + "x = 1\n" * 200)
        path = Path(tempfile.mkdtemp()) / "cockpit.toml"
        cmd = lab.jobsim_command("--steps", "0", "--interval", "0.1", "--start-delay", str(delay))
        lab.write_config(path, job={"command": cmd}, verify={"settle": settle})
        cfg = load_config(path)
        settle_ms = cfg.verify.settle * 1000
        fill_journal(cfg, history)
        cold: list[dict[str, float]] = []
        warm_rows: list[dict[str, float]] = []
        loads = []
        for r in range(n):
            loads.append(os.getloadavg()[0])
            base = job_alone(lab, cmd) * 1000
            eng = Engine(cfg)
            try:
                for i in range(1 + warm):
                    TRIPS[0] = 0
                    CALLS.clear()
                    t0, w0 = time.perf_counter(), time.time()
                    res = await eng.attempt(f"bench {r}.{i}")
                    wall = (time.perf_counter() - t0) * 1000
                    if trace:
                        print_trace(f"round {r}, {'cold' if i == 0 else 'warm'} attempt", res, w0)
                    assert res.outcome.value == "passed", res.verdict.summary()
                    row = {k: res.timings.get(k, 0.0) * 1000 for k in PARTS}
                    row["attempt"] = res.timings["total"] * 1000
                    row["job"] = base
                    row["between"] = row["attempt"] - sum(row[k] for k in PARTS)  # journal, events, listeners
                    row["share"] = row["attempt"] - base - settle_ms
                    row["trips"] = TRIPS[0]
                    row["engine"] = wall - row["attempt"]
                    (cold if i == 0 else warm_rows).append(row)
                await eng.run_action("stop")
            finally:
                await eng.close()
    print(f"attempts against lab container 200: job start-up {delay:g}s, settle {settle:g}s, 20-file source; "
          f"{n} rounds of 1 cold + {warm} warm; {history} attempts in the journal before; load average (1 min) median {statistics.median(loads):.2f}, "
          f"max {max(loads):.2f} on {os.cpu_count()} cores")
    parts = {"cold": report("cold: fresh Engine, new SSH connection", cold, settle_ms)}
    if warm_rows:
        parts["warm"] = report("warm: same Engine, connection kept", warm_rows, settle_ms)
    out = {f"{kind}_{k}": v for kind, figures in parts.items() for k, v in figures.items()}
    out["job"] = statistics.median(r["job"] for r in cold)
    out["attempt"] = parts["warm" if warm_rows else "cold"]["attempt"]
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5, help="rounds (each: a baseline, a cold attempt, --warm warm ones)")
    ap.add_argument("--warm", type=int, default=2, help="warm attempts per round")
    ap.add_argument("--start-delay", type=float, default=1.0)
    ap.add_argument("--settle", type=float, default=1.0, help="[verify] settle in seconds")
    ap.add_argument("--trace", action="store_true", help="print each attempt's stages and every call to the target "
                    "(session command, batch, host channel, host shell, channel) with its duration")
    ap.add_argument("--history", type=int, default=0, help="closed attempts (45 stages each) written into the journal first")
    a = ap.parse_args()
    _count_trips(a.trace)
    asyncio.run(main(a.n, a.start_delay, a.warm, a.settle, a.trace, a.history))
