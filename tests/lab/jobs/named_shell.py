"""A trainer that renames itself ``bash`` (setproctitle-style: ``prctl(PR_SET_NAME)``).

``python3 named_shell.py END``: renames itself, starts one worker process (as a DataLoader with
``num_workers=1`` does) that sleeps 60 s, prints ``step N loss X`` 20 times, then ends as END says:
``raise`` (a traceback, exit 1, its worker lingering) or ``stop`` (SIGSTOP to itself, state ``T``).
"""

import ctypes
import os
import signal
import sys
import time

end = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, b"bash", 0, 0, 0)  # PR_SET_NAME
if os.fork() == 0:
    time.sleep(60)
    os._exit(0)
for i in range(20):
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    time.sleep(0.05)
if end == "stop":
    os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(60)
raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
