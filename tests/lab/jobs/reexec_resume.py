"""A trainer that restarts itself in place after a crash: ``os.execv`` of its own command line.

Fault-tolerant training scripts do this (an ``except`` around the loop that prints the traceback
and re-executes the program to resume from its last checkpoint; the same pid, a fresh
interpreter).  ``python3 reexec_resume.py GATE [RELOAD_S]``: prints ``step N loss X`` every 50 ms
and saves a checkpoint (``GATE.ckpt``) every 5 steps until GATE exists; then its step raises
``RuntimeError``, caught at the top level: ``traceback.print_exc()`` (the traceback reads as an
uncaught one: its outermost frame is ``<module>``), a line saying it restarts, and ``os.execv``.
The new program says it resumes, loads the checkpoint (RELOAD_S seconds, default 4, as importing
torch and reading a checkpoint takes), and trains on from it until ``GATE.end`` exists, then
prints ``training done`` and exits 0.
"""

import os
import sys
import time
import traceback

gate = sys.argv[1]
reload_s = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
ckpt = gate + ".ckpt"
resumed = os.path.exists(ckpt)


def train_step(i: int) -> float:
    if not resumed and os.path.exists(gate):
        raise RuntimeError(f"CUDA error: an illegal memory access was encountered (step {i})")
    return 1.0 / (i + 1)


def train() -> None:
    i = 0
    if resumed:
        print(f"resuming from {ckpt}", flush=True)
        time.sleep(reload_s)  # loading the checkpoint
        with open(ckpt) as f:
            i = int(f.read())
        print(f"checkpoint loaded: step {i}", flush=True)
    while not os.path.exists(gate + ".end"):
        loss = train_step(i)
        print(f"step {i} loss {loss:.4f}", flush=True)
        if i % 5 == 0:
            with open(ckpt, "w") as f:
                f.write(str(i))
        i += 1
        time.sleep(0.05)
    print("training done", flush=True)


try:
    train()
except RuntimeError:
    traceback.print_exc()
    print("restarting from the last checkpoint", flush=True)
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *sys.argv])
