"""A trainer that recovers from one error and later dies of another (tests/test_redteam_r13_recovered_error_lab.py).

``python3 r13_recovered_then_crash.py GATE``: prints ``step N loss X`` every 50 ms.  Once GATE exists,
one shard fetch fails with ``ConnectionResetError``: the loop catches it, prints it
(``traceback.print_exc()``: a whole traceback, as the retry loops of data pipelines do) and retries,
and training goes on.  Once ``GATE.crash`` exists it dies of an uncaught ``ValueError`` (a shape bug),
exit 1.
"""

import os
import sys
import time
import traceback

gate = sys.argv[1]
failed_once = False


def fetch(step: int) -> int:
    global failed_once
    if not failed_once and os.path.exists(gate):
        failed_once = True
        raise ConnectionResetError(104, "Connection reset by peer")
    return step


step = 0
while not os.path.exists(gate + ".crash"):
    step += 1
    try:
        fetch(step)
    except ConnectionResetError:
        traceback.print_exc()
        print("shard fetch failed, retrying", flush=True)
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    time.sleep(0.05)
raise ValueError("Target size (torch.Size([32, 1])) must be the same as input size (torch.Size([32, 10]))")
