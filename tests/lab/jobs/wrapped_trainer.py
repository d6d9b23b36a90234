"""A trainer run under a wrapper program (``timeout``, ``/usr/bin/time``): tests/test_redteam_timeout_lab.py
and tests/test_redteam_time_report_lab.py.

``python3 wrapped_trainer.py MODE [GATE]``: prints ``step N loss X`` every 50 ms until the file GATE
exists (at once without one; 60 s at most), then ends by MODE: ``hang`` sleeps (for a wrapper's time
limit to end it), ``slowsave`` does too, but catches SIGTERM and spends 30 s "saving a checkpoint"
(a ``timeout -k`` has to KILL it), ``sigkill`` dies of SIGKILL at once (the OOM killer's signal),
``raise`` raises a ``RuntimeError``, ``exitmsg`` calls ``sys.exit("…")`` (exit 1, the message on
stderr, no traceback).
"""

import os
import signal
import sys
import time

mode, gate = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""


def save(_sig: int, _frame: object) -> None:
    print("SIGTERM received: saving a checkpoint", flush=True)
    time.sleep(30)
    sys.exit(0)


if mode == "slowsave":
    signal.signal(signal.SIGTERM, save)
print("loading the dataset: 64 shards", flush=True)
step, deadline = 0, time.time() + 60
while gate and not os.path.exists(gate) and time.time() < deadline:
    print(f"step {step} loss {2.5 - step * 0.001:.3f}", flush=True)
    step += 1
    time.sleep(0.05)
if mode in ("hang", "slowsave"):
    while True:
        time.sleep(1)
elif mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "raise":
    raise RuntimeError(f"shard 17 has a corrupt header at step {step}")
elif mode == "exitmsg":
    sys.exit(f"validation loss diverged at step {step}: stopping")
