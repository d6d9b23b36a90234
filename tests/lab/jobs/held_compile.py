"""A training job without torch whose first torch.compile lasts as long as a test says.

``held_compile.py FIXTURE_DIR --hold S [--steps N] [--interval S]``: prints ``TORCH_TRACE=<value>``;
writes each ``dedicated_log_torch_trace_*.log`` of ``FIXTURE_DIR`` into ``$TORCH_TRACE`` up to its
first ``dynamo_start`` (a compile starts), holds ``--hold`` seconds, writes the rest (the compile's
``compilation_metrics`` and whatever followed it), then prints ``step N loss X`` lines.  Without
``TORCH_TRACE`` (the trace off) it holds all the same, writing nothing: a job that compiles
unseen.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("fixture")
    ap.add_argument("--hold", type=float, required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--interval", type=float, default=0.05)
    a = ap.parse_args()
    out_dir = os.environ.get("TORCH_TRACE", "")
    print(f"TORCH_TRACE={out_dir}", flush=True)
    parts: dict[str, tuple[list[str], list[str]]] = {}
    for path in sorted(glob.glob(os.path.join(a.fixture, "dedicated_log_torch_trace_*.log"))):
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        first = next((i for i, ln in enumerate(lines) if '{"dynamo_start"' in ln), len(lines) - 1)
        parts[os.path.join(out_dir, os.path.basename(path))] = (lines[: first + 1], lines[first + 1:])
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        for dest, (head, _) in parts.items():
            with open(dest, "a", encoding="utf-8") as f:
                f.writelines(head)
    print("compiling the model", flush=True)
    time.sleep(a.hold)
    if out_dir:
        for dest, (_, rest) in parts.items():
            with open(dest, "a", encoding="utf-8") as f:
                f.writelines(rest)
    print("compiled", flush=True)
    for n in range(1, a.steps + 1):
        print(f"step {n} loss {1.0 / n:.4f}", flush=True)
        time.sleep(a.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
