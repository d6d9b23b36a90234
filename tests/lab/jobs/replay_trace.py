"""A training job without torch that writes a recorded torch.compile trace into ``$TORCH_TRACE``.

``replay_trace.py FIXTURE_DIR [--over S] [--steps N] [--interval S] [--hang | --crash]``: prints
``TORCH_TRACE=<value>``, then replays every ``dedicated_log_torch_trace_*.log`` of ``FIXTURE_DIR``
line by line into a file of the same name in ``$TORCH_TRACE`` over ``--over`` seconds (the files
side by side, as ranks write them), then prints ``step N loss X`` lines.  ``--hang``: stops after
the first ``dynamo_start`` (a compile that never ends) and prints no progress; ``--crash``: after
the trace, a traceback and exit status 1 (the compile's error raised into the job).
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
    ap.add_argument("--over", type=float, default=2.0)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("--hang", action="store_true")
    ap.add_argument("--crash", action="store_true")
    a = ap.parse_args()
    out_dir = os.environ.get("TORCH_TRACE", "")
    print(f"TORCH_TRACE={out_dir}", flush=True)
    if not out_dir:
        print("no TORCH_TRACE: nothing to write", flush=True)
        return 3
    os.makedirs(out_dir, exist_ok=True)
    files = {}
    for path in sorted(glob.glob(os.path.join(a.fixture, "dedicated_log_torch_trace_*.log"))):
        with open(path, encoding="utf-8") as f:
            files[os.path.join(out_dir, os.path.basename(path))] = f.readlines()
    batches = 20
    for i in range(batches):
        for dest, lines in files.items():
            part = lines[len(lines) * i // batches: len(lines) * (i + 1) // batches]
            if a.hang:
                first = next((j for j, ln in enumerate(part) if '{"dynamo_start"' in ln), None)
                if first is not None:
                    part = part[: first + 1]
            with open(dest, "a", encoding="utf-8") as f:
                f.writelines(part)
            if a.hang and any('{"dynamo_start"' in ln for ln in part):
                print("compiling the model", flush=True)
                time.sleep(120)
                return 0
        time.sleep(a.over / batches)
    print("compiled", flush=True)
    if a.crash:
        time.sleep(1.0)
        print("Traceback (most recent call last):\n  File \"train.py\", line 13, in <module>\n"
              "torch._dynamo.exc.BackendCompilerFailed: backend='broken_backend' raised:\nRuntimeError: cockpit lab: backend refused this",
              flush=True)
        return 1
    for n in range(1, a.steps + 1):
        print(f"step {n} loss {1.0 / n:.4f}", flush=True)
        time.sleep(a.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
