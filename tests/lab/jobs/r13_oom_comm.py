"""A trainer named as PyTorch names its main thread (tests/test_redteam_r13_oom_comm_lab.py).

``python3 r13_oom_comm.py``: sets its ``comm`` to ``pt_main_thread`` (``prctl(PR_SET_NAME)``, what
``import torch`` does: the kernel's OOM report names a torch job ``pt_main_thread``, never
``python3``), then prints ``step N loss X`` every 50 ms until it is killed.
"""

import ctypes
import time

ctypes.CDLL(None).prctl(15, b"pt_main_thread", 0, 0, 0)  # PR_SET_NAME
for step in range(1, 4000):
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    time.sleep(0.05)
