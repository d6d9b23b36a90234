"""A trainer piped into ``tee`` that crashes (tests/test_redteam_r10_tee_crash_lab.py).

``python3 r10_tee_crash.py GATE [MODE]`` prints ``step N loss X`` every 50 ms until GATE exists (or
at once, for 20 steps, when GATE is ``-``), then ends by MODE: ``raise`` (the default: an uncaught
``RuntimeError``, a traceback, exit 1, while ``tee`` after it in the pipeline exits 0), ``ok``
(exit 0 after ``training done``).
"""

import os
import sys
import time

gate = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else "raise"
step = 0
while (step < 20) if gate == "-" else not os.path.exists(gate):
    print(f"step {step} loss {1.0 / (step + 1):.4f}", flush=True)
    step += 1
    time.sleep(0.05)


def load_shard(n: int) -> None:
    raise RuntimeError(f"checkpoint shard {n} is corrupt: unexpected EOF")


if mode == "raise":
    load_shard(3)
print("training done", flush=True)
