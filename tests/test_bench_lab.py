"""The benchmarks keep running as the code under them changes: the quick ones through ``python -m
bench --smoke`` (``--quick``'s lanes side by side, smaller n still), each row a figure, none failed.  A renamed argument or a
moved function in cockpit otherwise shows up only when someone next measures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the benchmarks that finish in seconds (the TUI and timeline ones run in the full bench only)
FAST = ("probe", "refresh", "gpu_procs", "classifier", "metrics", "log_search", "targets")


def test_the_fast_benchmarks_run_and_every_row_has_a_figure(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "bench", "--smoke", *FAST], cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.split()[:1] and ln.split()[0] in {"probe", "refresh", "gpu", "classifier", "metrics", "log", "targets"}]
    benches = {row[0] for row in rows}
    assert benches == {"probe", "refresh", "gpu", "classifier", "metrics", "log", "targets"}, r.stdout
    assert "FAILED" not in r.stdout + r.stderr, r.stdout
    assert f"{len(FAST)} benchmarks in" in r.stdout
