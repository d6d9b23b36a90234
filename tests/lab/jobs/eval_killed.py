"""A trainer whose evaluation subprocess is killed by SIGKILL (the OOM killer's signal).

``python3 eval_killed.py GATE``: prints ``step N loss X`` every 50 ms and, every 10 steps, runs its
evaluation in a subprocess (``subprocess.run([...], check=True)``, as scripts that evaluate a
checkpoint out of process do: the script itself with ``eval``).  Once GATE exists the evaluation's child dies of SIGKILL (as the
kernel's OOM killer ends the biggest process): ``subprocess.CalledProcessError: Command '[…]' died
with <Signals.SIGKILL: 9>.``, uncaught in the trainer, exit 1.
"""

import os
import signal
import subprocess
import sys
import time

gate = sys.argv[1]
if sys.argv[2:] == ["eval"]:  # the evaluation, in its own process
    if os.path.exists(gate):
        os.kill(os.getpid(), signal.SIGKILL)
    print("eval: loss 0.41", flush=True)
    sys.exit(0)


def evaluate(step: int) -> None:
    print(f"evaluating the checkpoint of step {step}", flush=True)
    subprocess.run([sys.executable, __file__, gate, "eval"], check=True)


i = 0
while True:
    print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
    if i % 10 == 9:
        evaluate(i)
    i += 1
    time.sleep(0.05)
