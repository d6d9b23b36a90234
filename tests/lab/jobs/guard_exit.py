"""Trains 60 steps, then its own guard stops the run: exit 1, one line on stderr, no traceback.

The code ran (60 progress lines): an attempt that ends like this failed, it is not untested.
"""

import sys
import time

for step in range(1, 61):
    print(f"step {step} loss {2.5 - step * 0.01:.3f}", flush=True)
    time.sleep(0.01)
print("non-finite loss (inf) at iteration 65, aborting the run", file=sys.stderr, flush=True)
sys.exit(1)
