"""``python -m bench``: every benchmark, one table (figure beside a baseline measured in the same run).

    python -m bench                     every benchmark, full size (many minutes)
    python -m bench --quick             every benchmark with small n, in lanes side by side
                                        (QUICK_PLAN; under a minute)
    python -m bench probe modals        only these (names: see --list)
    python -m bench --markdown          the table as Markdown (docs/performance.md)
    python -m bench soak --minutes 120  the TUI in tmux with a streaming job and modal churn:
                                        RSS and CPU every minute (see bench/soak.py)

Each benchmark runs in a fresh interpreter; its own detailed printout is kept out of the way
(``--verbose`` shows it on stderr); the table comes last.  A benchmark that fails is reported in its row and makes the exit status 1; the
others still run.  The benchmarks need the test lab (tests/lab: OpenSSH's sshd, unshare) and
tmux (log_pane); one that cannot start says so in its row.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import Row, format_table  # noqa: E402
from bench.suite import BENCHES  # noqa: E402


def machine() -> str:
    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name")), "")
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs{f' ({cpu})' if cpu else ''}, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}"


MARK = "@@bench-rows "


def one(name: str, quick: bool) -> int:
    """Child mode: run one benchmark, its printout as it comes, its rows as one JSON line at the end."""
    rows = BENCHES[name](quick)
    sys.stdout.flush()
    print(MARK + json.dumps([dataclasses.asdict(r) for r in rows]), flush=True)
    return 0


#: ``--quick``'s plan: stages one after the other; in a stage, lanes side by side (each benchmark in
#: its own interpreter and lab), the benchmarks of a lane one after the other.  The first stage is
#: the benchmarks that mostly wait on their job's own timeline (start-up, settle, thresholds, the
#: scheduler) and the idle TUIs (measured together, so the machine they see is the same); the second
#: puts the TUI benchmarks beside the probe and CPU ones.  Figures of a quick run come from a shared
#: machine and are read against their own baselines (measured in the same process, beside them);
#: ``python -m bench`` without ``--quick`` runs every benchmark alone.
QUICK_PLAN: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("attempt",), ("save_to_verdict",), ("fate",), ("stall",), ("slurm",), ("idle",)),
    (("log_pane", "modals"), ("probe", "refresh", "gpu_procs", "targets"), ("classifier", "metrics", "log_search")),
)
class Child:
    """One benchmark in a fresh interpreter (its own RSS, no state shared: the TUI's workarounds
    patch Textual's classes, some benches set module globals); its output in a temp file."""

    def __init__(self, name: str, quick: bool) -> None:
        self.name, self.t0 = name, time.monotonic()
        self.out = tempfile.TemporaryFile("w+")
        cmd = [sys.executable, "-m", "bench", "--rows-of", name, *(["--quick"] if quick else [])]
        self.proc = subprocess.Popen(cmd, cwd=str(REPO), stdout=self.out, stderr=subprocess.STDOUT, text=True)

    def finish(self, verbose: bool) -> tuple[list[Row], bool, float]:
        rc = self.proc.wait()
        took = time.monotonic() - self.t0
        self.out.seek(0)
        out = self.out.read().splitlines()
        self.out.close()
        got = [json.loads(ln[len(MARK):]) for ln in out if ln.startswith(MARK)]
        if verbose:
            print(f"--- {self.name}\n" + "\n".join(ln for ln in out if not ln.startswith(MARK)), file=sys.stderr, flush=True)
        if rc != 0 or not got:
            why = next((ln for ln in reversed(out) if ln.strip()), f"exit {rc}")
            if not verbose:
                print(f"{self.name} failed (exit {rc}):\n" + "\n".join(out[-40:]), file=sys.stderr, flush=True)
            return [Row(self.name, f"FAILED: {why.strip()}"[:100], float("nan"), "", None)], False, took
        return [Row(**d) for d in got[-1]], True, took


def run_all(names: list[str], quick: bool, verbose: bool) -> tuple[list[Row], list[str], dict[str, float]]:
    """Every benchmark, one at a time (with ``quick``: by :data:`QUICK_PLAN`, lanes side by side)."""
    results: dict[str, list[Row]] = {}
    failed: list[str] = []
    took: dict[str, float] = {}
    lock = threading.Lock()

    def run_lane(lane: list[str]) -> None:
        for name in lane:
            rows, ok, secs = Child(name, quick).finish(verbose)
            with lock:
                results[name], took[name] = rows, secs
                if not ok:
                    failed.append(name)

    plan = [[[n for n in lane if n in names] for lane in stage] for stage in QUICK_PLAN] if quick else []
    for stage in plan:
        lanes = [lane for lane in stage if lane]
        if not lanes:
            continue
        print(f"… {' | '.join(', '.join(lane) for lane in lanes)} (lanes side by side)", file=sys.stderr, flush=True)
        threads = [threading.Thread(target=run_lane, args=(lane,), name=f"bench-lane-{lane[0]}") for lane in lanes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for name in names:
        if name not in results:
            print(f"… {name}", file=sys.stderr, flush=True)
            run_lane([name])
    return [r for n in names for r in results[n]], failed, took


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["soak"]:
        from bench import soak

        return soak.main(argv[1:])
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0],
                                epilog="python -m bench soak --help: the soak's options")
    p.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all)")
    p.add_argument("--quick", action="store_true", help="small n for each benchmark")
    p.add_argument("--smoke", action="store_true", help="--quick with smaller n still: every row a coarse figure "
                   "(the test suite's check that the benchmarks still run)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--verbose", "-v", action="store_true", help="show each benchmark's own printout")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    p.add_argument("--rows-of", choices=list(BENCHES), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.smoke:  # the children (and this process's suite) read it
        os.environ["COCKPIT_BENCH_SMOKE"] = "1"
        args.quick = True
    if args.rows_of:
        return one(args.rows_of, args.quick)
    if args.list:
        print("\n".join([*BENCHES, "soak"]))
        return 0
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        p.error(f"unknown benchmark {', '.join(unknown)}: one of {', '.join(BENCHES)} (or: soak --minutes N)")
    names = args.names or list(BENCHES)
    head = f"python -m bench{' --quick' if args.quick else ''}: {machine()}"
    t0 = time.monotonic()
    rows, failed, took = run_all(names, args.quick, args.verbose)
    total = time.monotonic() - t0
    print(head)
    print(format_table(rows, markdown=args.markdown))
    stages = [" | ".join(", ".join(n for n in lane if n in names) for lane in stage if any(n in names for n in lane))
              for stage in QUICK_PLAN] if args.quick else []
    print(f"\n{len(names)} benchmarks in {total:.0f} s ({', '.join(f'{n} {s:.0f}s' for n, s in took.items())}); "
          f"ratio = value ÷ baseline; load at the end {os.getloadavg()[0]:.1f}"
          + (f"; lanes side by side (|), stage by stage (then): {' then '.join(s for s in stages if s)}" if stages else ""))
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
