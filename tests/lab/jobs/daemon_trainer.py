"""A launcher whose trainer daemonizes (tests/test_redteam_daemon_lab.py).

``python3 daemon_trainer.py GATE``: says it starts, then double-forks (``setsid`` between the forks,
as a daemon does) and exits 0 at once; the daemon keeps the log as its stdout and prints ``step N
loss X`` every 50 ms until the file GATE exists, then ``training done``.
"""

import os
import sys
import time

gate = sys.argv[1]
print("launcher: starting the trainer in the background", flush=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        i, deadline = 0, time.time() + 60
        while not os.path.exists(gate) and time.time() < deadline:
            print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
            i += 1
            time.sleep(0.05)
        print("training done", flush=True)
        os._exit(0)
    os._exit(0)
sys.exit(0)
