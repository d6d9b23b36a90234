"""Announces 1000 steps (``step i/1000``), trains 40, then ends with exit code 0: ``--how caught``
prints a CUDA-looking traceback first and calls ``sys.exit(0)`` (an ``except: print_exc()`` at the
top level), ``--how exit`` calls ``os._exit(0)``, ``--how full`` runs all 1000 (the control)."""

import argparse
import os
import sys
import time
import traceback

ap = argparse.ArgumentParser()
ap.add_argument("--how", choices=("caught", "exit", "full"), default="caught")
ap.add_argument("--interval", type=float, default=0.05)
a = ap.parse_args()
last = 1000 if a.how == "full" else 40
try:
    for step in range(1, last + 1):
        print(f"step {step}/1000 loss {2.5 - step * 0.001:.4f}", flush=True)
        time.sleep(a.interval if step < 40 else 0.0005)
    if a.how == "caught":
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    if a.how == "exit":
        os._exit(0)
except RuntimeError:
    traceback.print_exc()
    sys.stdout.flush()
    sys.exit(0)
