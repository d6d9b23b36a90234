"""Trains 70 steps, then dies of SIGSEGV as a crash in native code would (faulthandler off).

Python prints nothing; the shell that waits for it prints its own line (dash: ``Segmentation
fault``; bash: ``…: line N: PID Segmentation fault      (core dumped) CMD``).
"""

import os
import signal
import time

for step in range(1, 71):
    print(f"step {step} loss {2.5 - step * 0.01:.3f}", flush=True)
    time.sleep(0.01)
os.kill(os.getpid(), signal.SIGSEGV)
