"""Steps, a line of its own, then a signal (tests/test_redteam_signals_lab.py).

``python3 signal_self.py SIG``: prints ``step N loss X`` 15 times and ``checkpoint saved at step 14``,
then sends itself SIG (``INT``: Python's handler raises KeyboardInterrupt, unwinds the program with a
traceback and dies of SIGINT, as under ``kill -INT``; ``TERM``: the default action, no traceback).
"""

import os
import signal
import sys
import time

sig = getattr(signal, "SIG" + sys.argv[1])
for i in range(15):
    print(f"step {i} loss {2.0 - i * 0.01:.3f}", flush=True)
    time.sleep(0.02)
print("checkpoint saved at step 14", flush=True)
os.kill(os.getpid(), sig)
time.sleep(30)
