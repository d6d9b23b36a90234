"""A trainer whose progress lines go on while its step stays put (tests/test_redteam_stuck_step_lab.py).

``python3 stuck_step.py MODE``: ``stuck`` prints ``step N loss X`` every 50 ms for 24 steps, then
keeps printing ``step 24 …``: the overflow-skip or retry loop that never gets past one batch (a
gradient scaler skipping every step, a data fetch retried forever), for 60 s at most.  ``accum``
is the honest neighbour: gradient accumulation that logs each of a step's four micro-batches
(``step N micro K/4 loss X``), a step every second, six steps, then exit 0.
"""

import sys
import time

mode = sys.argv[1]
if mode == "stuck":
    for i in range(24):
        print(f"step {i} loss {2.5 - i * 0.01:.4f}", flush=True)
        time.sleep(0.05)
    deadline, n = time.time() + 60, 0
    while time.time() < deadline:
        n += 1
        print(f"step 24 loss {2.26 + (n % 7) * 0.001:.4f} grad norm inf: skipping the step (scale {65536 >> min(n, 16)})", flush=True)
        time.sleep(0.05)
else:
    for i in range(6):
        for k in range(4):
            print(f"step {i} micro {k + 1}/4 loss {2.5 - i * 0.01 - k * 0.001:.4f}", flush=True)
            time.sleep(0.25)
    print("training done", flush=True)
