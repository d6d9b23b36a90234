"""A trainer that catches its own crash, says so, and exits 0 (tests/test_redteam_r10_caught_exit0_lab.py).

``python3 r10_caught_exit0.py GATE HOW`` prints ``step N loss X`` every 50 ms until GATE exists (or
for 20 steps when GATE is ``-``), then its step raises ``RuntimeError``, which its ``main`` catches,
and reports by HOW: ``print`` (``training failed: RuntimeError('checkpoint shard 3 is corrupt')``
on stdout), ``print_exc`` (``traceback.print_exc()``), ``log`` (``logging.error(..., exc_info=True)``),
then ``sys.exit(0)``.
"""

import logging
import os
import sys
import time
import traceback

gate, how = sys.argv[1], sys.argv[2]


def train() -> None:
    step = 0
    while (step < 20) if gate == "-" else not os.path.exists(gate):
        print(f"step {step} loss {1.0 / (step + 1):.4f}", flush=True)
        step += 1
        time.sleep(0.05)
    raise RuntimeError("checkpoint shard 3 is corrupt")


try:
    train()
except Exception as e:
    if how == "print":
        print(f"training failed: {e!r}", flush=True)
    elif how == "print_exc":
        traceback.print_exc()
    else:
        logging.error("training failed", exc_info=True)
    sys.exit(0)
