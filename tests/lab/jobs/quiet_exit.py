"""A job that exits 0 without a progress line (tests/test_redteam_quiet_exit_lab.py).

``python3 quiet_exit.py GATE`` prints ``iter N`` lines (no ``step``) until the file GATE exists, then
``nothing left to train`` and exits 0; ``quiet_exit.py -`` says ``dataset is empty, nothing to
train`` at once and exits 0.
"""

import os
import sys
import time

gate = sys.argv[1]
print("loading dataset", flush=True)
if gate == "-":
    print("dataset is empty, nothing to train", flush=True)
    sys.exit(0)
i, deadline = 0, time.time() + 60
while not os.path.exists(gate) and time.time() < deadline:
    print(f"iter {i}", flush=True)
    i += 1
    time.sleep(0.05)
print("nothing left to train", flush=True)
sys.exit(0)
