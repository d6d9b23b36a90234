"""``python -m bench``: every benchmark, one table (figure beside a baseline measured in the same run).

    python -m bench                     every benchmark, full size (many minutes)
    python -m bench --quick             every benchmark with small n; the five that mostly wait on
                                        their job's timeline side by side (about a minute)
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


#: benchmarks that mostly wait on their job's own timeline (start-up, settle, thresholds, the
#: scheduler): ``--quick`` runs these side by side, each with its own lab, to stay near a minute
SIDE_BY_SIDE = ("attempt", "save_to_verdict", "fate", "stall", "slurm")


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
    """Every benchmark, one at a time (with ``quick``: :data:`SIDE_BY_SIDE` together first)."""
    results: dict[str, list[Row]] = {}
    failed: list[str] = []
    took: dict[str, float] = {}

    def done(child: Child) -> None:
        results[child.name], ok, took[child.name] = child.finish(verbose)
        if not ok:
            failed.append(child.name)

    together = [n for n in names if quick and n in SIDE_BY_SIDE]
    if together:
        print(f"… {', '.join(together)} (side by side)", file=sys.stderr, flush=True)
        for child in [Child(n, quick) for n in together]:
            done(child)
    for name in names:
        if name not in results:
            print(f"… {name}", file=sys.stderr, flush=True)
            done(Child(name, quick))
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
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--verbose", "-v", action="store_true", help="show each benchmark's own printout")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    p.add_argument("--rows-of", choices=list(BENCHES), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
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
    side = [n for n in names if args.quick and n in SIDE_BY_SIDE]
    print(f"\n{len(names)} benchmarks in {total:.0f} s ({', '.join(f'{n} {s:.0f}s' for n, s in took.items())}); "
          f"ratio = value ÷ baseline; load at the end {os.getloadavg()[0]:.1f}"
          + (f"; {', '.join(side)} ran side by side" if side else ""))
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
