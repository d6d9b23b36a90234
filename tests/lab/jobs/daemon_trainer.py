"""A launcher whose trainer daemonizes (tests/test_redteam_daemon_lab.py).

``python3 daemon_trainer.py GATE``: says it starts, then double-forks (``setsid`` between the forks,
as a daemon does), waits until the daemon has trained a few steps (as launchers that check their
trainer came up do), lingers half a second and exits 0; the daemon keeps the log as its stdout and
prints ``step N loss X`` every 50 ms until the file GATE exists, then ``training done``.  A reading
therefore sees the launcher alive after progress: its exit 0 is not the training's end.
"""

import os
import sys
import time

gate = sys.argv[1]
print("launcher: starting the trainer in the background", flush=True)
up_r, up_w = os.pipe()
if os.fork() == 0:
    os.close(up_r)
    os.setsid()
    if os.fork() == 0:
        i, deadline = 0, time.time() + 60
        while not os.path.exists(gate) and time.time() < deadline:
            print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
            if i == 2:
                os.write(up_w, b"up")
                os.close(up_w)
            i += 1
            time.sleep(0.05)
        print("training done", flush=True)
        os._exit(0)
    os._exit(0)
os.close(up_w)
os.read(up_r, 2)  # the trainer came up
time.sleep(0.5)
sys.exit(0)
