"""A trainer that renames itself or closes its output mid-run (tests/test_redteam_r10_self_rename_lab.py).

``python3 r10_self_rename.py GATE HOW`` prints ``step N loss X`` every 50 ms; after step 9 it acts by
HOW: ``comm`` (writes ``pt_main_thread`` to ``/proc/self/comm``, as PyTorch names its main thread,
and trains on in the log until GATE exists, then dies of an uncaught ``RuntimeError``), ``close``
(closes fds 1 and 2 and trains on, its progress going to ``GATE.progress``, until GATE exists).
"""

import os
import sys
import time

gate, how = sys.argv[1], sys.argv[2]
for i in range(10):
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    time.sleep(0.05)
if how == "comm":
    with open("/proc/self/comm", "w") as f:
        f.write("pt_main_thread")
    i = 10
    while not os.path.exists(gate):
        print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
        i += 1
        time.sleep(0.05)
    raise RuntimeError("checkpoint shard 3 is corrupt")
sys.stdout.flush()
sys.stderr.flush()
os.close(1)
os.close(2)
with open(gate + ".progress", "a") as f:
    i, deadline = 10, time.time() + 60
    while not os.path.exists(gate) and time.time() < deadline:
        print(f"step {i} loss {2.0 - i * 0.001:.4f}", file=f, flush=True)
        i += 1
        time.sleep(0.05)
