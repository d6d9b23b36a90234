"""Every benchmark as rows for ``python -m bench``: how each is run in full and with ``--quick``.

Each entry runs one ``bench_*.py`` in this process (the lab and the TUI in tmux are started by the
bench itself) and turns its figures into :class:`~bench.common.Row` objects, each beside the
baseline that bench measures in the same run.  ``--quick`` uses small n and short phases: the
figures are coarser, the table is the same.
"""

from __future__ import annotations

import asyncio
import os
import statistics
from collections.abc import Callable

from bench.common import Row

__all__ = ["BENCHES"]

FRESH = "fresh `ssh … pct exec`"
#: ``python -m bench --smoke`` (the test that keeps the benchmarks running as the code changes):
#: smaller n still for the CPU-bound ones; every row still gets its figure, a coarse one
SMOKE = os.environ.get("COCKPIT_BENCH_SMOKE") == "1"


def _n(quick: bool, full: int, small: int, smoke: int) -> int:
    """``full`` in a full run, ``small`` with ``--quick``, ``smoke`` with ``--smoke``."""
    return full if not quick else smoke if SMOKE else small


def probe(quick: bool) -> list[Row]:
    from bench import bench_probe

    seen: dict[str, float] = {}
    show = bench_probe.show

    def keep(name: str, xs: list[float], base: float | None) -> float:  # every figure the bench shows, by its label
        seen[name] = med = show(name, xs, base)
        return med

    bench_probe.show = keep
    try:
        asyncio.run(bench_probe.main(_n(quick, 200, 20, 5), fresh_n=3 if SMOKE else None))
    finally:
        bench_probe.show = show
    fresh = next(v for k, v in seen.items() if k.startswith("fresh"))
    return [Row("probe", name, v, "ms", fresh, FRESH) for name, v in seen.items() if not name.startswith("fresh")]


def refresh(quick: bool) -> list[Row]:
    from bench import bench_refresh

    r = asyncio.run(bench_refresh.main(_n(quick, 50, 3, 2), fresh_n=(1 if SMOKE else 2) if quick else None))
    base = r.pop("baseline")
    rows = [Row("refresh", "full observation refresh", r.pop("full refresh"), "ms", base, "3 probes as " + FRESH)]
    before = {k.split(": ", 1)[1].split(",")[0]: (k.split(": ", 1)[1], v) for k, v in r.items() if k.startswith("before: ")}
    for part, v in r.items():  # each part beside its own earlier way when the bench measured one ("before: kernel, polled")
        if not part.startswith("before: "):
            was = before.get(part)
            rows.append(Row("refresh", f"  {part}", v, "ms", was[1] if was else None, was[0] if was else ""))
    return rows


def classifier(quick: bool) -> list[Row]:
    from bench import bench_classifier

    res = bench_classifier.measure(_n(quick, 1_000_000, 50_000, 5_000), 1 if quick else 3)
    return [Row("classifier", f"classifier, {name}", fast, "lines/s", naive, "every regex on every line") for name, fast, naive in res]


def attempt(quick: bool) -> list[Row]:
    from bench import bench_attempt

    r = asyncio.run(bench_attempt.main(1 if quick else 5, 0.5 if quick else 1.0))
    return [Row("attempt", "attempt, connect → progress seen", r["attempt"], "ms", r["job"], "the job alone to its first step")]


def save_to_verdict(quick: bool) -> list[Row]:
    from bench import bench_save_to_verdict

    r = bench_save_to_verdict.main(1 if quick else 3, 0.5 if quick else 1.0)
    return [Row("save→verdict", "save → verdict line (debounce 1 s)", r["total"], "ms", r["job"], "the job alone to its first step")]


def fate(quick: bool) -> list[Row]:
    from bench import bench_fate

    r = asyncio.run(bench_fate.main(1 if quick else 20, 0.5 if quick else 1.0))
    return [Row("fate", "threads die → verdict recorded", r["verdict"], "ms", r["probe"], "one job-state probe"),
            Row("fate", "passed job dies → fate recorded", r["fate"], "ms", r["probe"], "one job-state probe")]


def stall(quick: bool) -> list[Row]:
    from bench import bench_stall

    r = asyncio.run(bench_stall.main(1 if quick else 5, 0 if quick else 120.0, 2.0 if quick else 5.0))
    rows = [Row("stall", "deadlock → stalled recorded", r["latency"], "ms", r["threshold"], "the threshold (stall_after)")]
    if "false_auto" in r:
        rows.append(Row("stall", f"false stalls, healthy job, {r['seconds']:g} s (auto)", r["false_auto"], "", None))
    return rows


def gpu_procs(quick: bool) -> list[Row]:
    from bench import bench_gpu_procs

    r = asyncio.run(bench_gpu_procs.main(_n(quick, 30, 3, 2)))
    base = r.pop("before: both queries in the container")
    return [Row("gpu procs", f"GPU refresh, {name}", v, "ms", base, "both queries in the container (finds none)") for name, v in r.items()]


def metrics(quick: bool) -> list[Row]:
    from bench import bench_metrics

    lines = bench_metrics.generate(_n(quick, 200_000, 20_000, 2_000), 0.1)
    repeat = 1 if quick else 3
    parse_ns = bench_metrics.per_line(bench_metrics.parse_all, lines, repeat)
    cls_ns = bench_metrics.per_line(bench_metrics.classify_all, lines, repeat)
    return [Row("metrics", "metrics parser, 10 % metric lines", parse_ns / 1000, "µs/line", cls_ns / 1000, "the failure classifier, same lines")]


def log_pane(quick: bool) -> list[Row]:
    from bench import bench_log_pane

    argv = ["--seconds", "4", "--presses", "2", "--quiet", "1", "--settle", "0.5", "--catchup", "8"] if quick else []
    args = bench_log_pane.parse(argv)
    if bench_log_pane.bench(args) != 0:
        raise RuntimeError("the log-pane bench failed (its output says where)")
    f = args.figures
    rate = f"{f['rate'] / 1000:.0f}k lines/s"
    return [Row("log pane", f"help opens (?), log streaming {rate}", f["help_loaded_ms"], "ms", f["help_idle_ms"], "help opens, idle"),
            Row("log pane", f"TUI CPU, log streaming {rate}", f["cpu_loaded"], "%", f["cpu_idle"], "TUI CPU idle (same presses)"),
            Row("log pane", "TUI CPU idle, no key presses", f["cpu_idle_quiet"], "%", None),
            Row("log pane", "screen shows the last line after the job", f["caught_ms"] if f["caught_ms"] is not None else float("nan"), "ms", None),
            *[Row("log pane", f"screen behind the file while streaming, {what}", nan(f[f"lag_{key}_ms"]), "ms",
                  nan(f["tail_lag_median_ms"]) if key == "median" else None, "`tail -f` of the same file, median" if key == "median" else "")
              for key, what in (("median", "median"), ("max", "max"))]]


def nan(v: float | None) -> float:
    return float("nan") if v is None else v


def idle(quick: bool) -> list[Row]:
    from bench import bench_idle

    interval, now, base = bench_idle.run(10 if quick else 60, 4 if quick else 10, together=quick)
    return [Row("idle", f"TUI CPU idle against the lab, refresh {interval:g} s", now["cpu_pct"], "%", base["cpu_pct"], "the same, refresh 60 s"),
            Row("idle", "TUI RSS growth over the window", now["rss1_mib"] - now["rss0_mib"], "MiB", None)]


def log_search(quick: bool) -> list[Row]:
    import argparse

    from bench import bench_log_search

    args = argparse.Namespace(lines=_n(quick, 200_000, 50_000, 5_000), repeat=1 if quick else 3, gc="on")
    asyncio.run(bench_log_search.run(args))
    rows = []
    for mode, text, res in args.tables["on"]:
        if mode == "repaint":
            continue
        stall = {k: statistics.median(r[0] for r in res[k]) * 1000 for k in (False, True)}
        rows.append(Row("log search", f"{mode} {text}: longest stall, chunked", stall[True], "ms", stall[False], "in one go"))
    return [rows[0], rows[3]]


def slurm(quick: bool) -> list[Row]:
    from bench import bench_slurm

    r = bench_slurm.main(["--quick"] if quick else ["--n", "5"])
    return [Row("slurm", "time added beyond sbatch, Slurm and the job", r["cockpit"], "ms", r["by_hand"], "sbatch + a 10 ms log poll by hand")]


def modals(quick: bool) -> list[Row]:
    from bench import bench_modals

    return bench_modals.rows(quick)


def targets(quick: bool) -> list[Row]:
    from bench import bench_targets

    return list(bench_targets.rows(quick))


#: name → runner, in the order of the table
BENCHES: dict[str, Callable[[bool], list[Row]]] = {
    "probe": probe,
    "refresh": refresh,
    "gpu_procs": gpu_procs,
    "classifier": classifier,
    "metrics": metrics,
    "attempt": attempt,
    "save_to_verdict": save_to_verdict,
    "fate": fate,
    "stall": stall,
    "log_pane": log_pane,
    "idle": idle,
    "log_search": log_search,
    "slurm": slurm,
    "targets": targets,
    "modals": modals,
}
