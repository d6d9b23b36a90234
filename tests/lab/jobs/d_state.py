"""A trainer stuck in uninterruptible sleep (D) mid-run.

``python3 d_state.py``: prints ``step N loss X`` every 50 ms; after step 9 it ``vfork``s a child that
pauses: the parent waits for it in the kernel, in state ``D``, as a read from a dead NFS server would.
"""

import ctypes
import time

libc = ctypes.CDLL(None, use_errno=True)
for i in range(10):
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    time.sleep(0.05)
if libc.vfork() == 0:
    libc.pause()
    libc._exit(0)
print("unreachable", flush=True)
