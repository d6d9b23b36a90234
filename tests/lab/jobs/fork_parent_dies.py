"""A trainer that forks: the parent raises (a traceback, exit 1) while the child trains on.

``python3 fork_parent_dies.py GATE``: prints 5 ``step N`` lines, forks; the child prints ``step N
loss X`` every 50 ms until GATE exists, then ``training done``; the parent waits until the child's
first step, then raises ``RuntimeError`` and exits 1 (with a second argument ``exit0``: exits 0
without a word, as a launcher that forked its trainer does).
"""

import os
import sys
import time

gate = sys.argv[1]
for i in range(5):
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    time.sleep(0.05)
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    i, deadline = 5, time.time() + 60
    while not os.path.exists(gate) and time.time() < deadline:
        print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
        if i == 5:
            os.write(w, b"up")
        i += 1
        time.sleep(0.05)
    print("training done", flush=True)
    os._exit(0)
os.close(w)
os.read(r, 2)
if sys.argv[2:] == ["exit0"]:
    sys.exit(0)
raise RuntimeError("rank 0 lost its NCCL communicator")
