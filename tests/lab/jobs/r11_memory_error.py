"""A trainer that runs out of address space (tests/test_redteam_r11_memory_error_lab.py).

``python3 r11_memory_error.py GATE`` prints ``step N loss X`` every 50 ms until GATE exists (or for
20 steps when GATE is ``-``), then allocates a 1 GiB host-side buffer (a batch cache) over the
address-space limit its command sets (``ulimit -v``): Python raises ``MemoryError``, uncaught (the
allocation fails at once, no page is touched).
"""

import os
import sys
import time

gate = sys.argv[1]


def cache_batches() -> bytearray:
    return bytearray(1 << 30)


step = 0
while (step < 20) if gate == "-" else not os.path.exists(gate):
    step += 1
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    time.sleep(0.05)
cache_batches()
