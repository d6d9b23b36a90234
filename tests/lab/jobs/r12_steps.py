"""A trainer for a later cockpit to meet (tests/test_redteam_r12_*_lab.py).

``python3 r12_steps.py STEPS END`` prints ``step N loss X`` every 50 ms for STEPS steps, then ends as
END says: ``ok`` (``training finished``, exit 0), ``crash`` (an uncaught ``ValueError``, exit 1),
``hang`` (sleeps for ever, printing nothing).
"""

import sys
import time

steps, end = int(sys.argv[1]), sys.argv[2]
for step in range(1, steps + 1):
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    time.sleep(0.05)
if end == "crash":
    raise ValueError("label 7 out of range for 5 classes")
if end == "hang":
    while True:
        time.sleep(60)
print("training finished", flush=True)
