"""A trainer stopped mid-run (tests/test_redteam_stopped_lab.py).

``python3 stop_self.py GATE``: prints ``step N loss X`` every 50 ms; after step 9 it stops itself
with SIGSTOP (as ``kill -STOP``, a debugger or a Ctrl-Z would), and once continued trains on until
the file GATE exists, then prints ``training done``.
"""

import os
import signal
import sys
import time

gate = sys.argv[1]
i, deadline = 0, time.time() + 60
while not os.path.exists(gate) and time.time() < deadline:
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    if i == 9:
        os.kill(os.getpid(), signal.SIGSTOP)
    i += 1
    time.sleep(0.05)
print("training done", flush=True)
