"""Ten progress lines, then no more while the process lives on (a hang: tests/test_redteam_stall_gpu_lab.py)."""

import time

for i in range(10):
    print(f"step {i} loss {2.0 - i * 0.01:.3f}", flush=True)
    time.sleep(0.02)
time.sleep(120)
