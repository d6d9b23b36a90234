"""A trainer whose loop dies in a swallowed exception, then spins.

``python3 busy_swallow.py``: prints ``step N loss X`` every 50 ms; at step 10 an exception is caught
and swallowed (no traceback), and the process spins in a busy loop (100 % of a core) for 60 s.
"""

import time

try:
    for i in range(1000):
        print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
        if i == 10:
            raise StopIteration("loader exhausted")
        time.sleep(0.05)
except StopIteration:
    pass
end = time.time() + 60
while time.time() < end:
    pass
