"""A trainer that sends its stdout and stderr to /dev/null mid-run and trains on.

``python3 stdout_away.py GATE``: prints ``step N loss X`` every 50 ms; after step 9 it ``dup2``s
/dev/null over fds 1 and 2 and writes its progress to ``GATE.progress`` instead, until GATE exists.
"""

import os
import sys
import time

gate = sys.argv[1]
for i in range(10):
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    time.sleep(0.05)
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
os.dup2(null, 2)
with open(gate + ".progress", "a") as f:
    i, deadline = 10, time.time() + 60
    while not os.path.exists(gate) and time.time() < deadline:
        print(f"step {i} loss {2.0 - i * 0.001:.4f}", file=f, flush=True)
        i += 1
        time.sleep(0.05)
