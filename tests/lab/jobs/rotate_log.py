"""A job whose log is rotated under it (tests/test_redteam_logrotate_lab.py), as logrotate's
default ``create`` mode does: the log renamed to ``LOG.1`` and a new empty ``LOG`` made, while the
job writes on to its stdout, the renamed file.

``python3 rotate_log.py GATE``: 5 ``step`` lines, the rotation, then a ``step`` line every 50 ms
until the file GATE exists; then a traceback and exit 1.
"""

import os
import time

gate = os.sys.argv[1]
log = os.readlink("/proc/self/fd/1")
for i in range(5):
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    time.sleep(0.02)
os.rename(log, log + ".1")
open(log, "w").close()
i, deadline = 5, time.time() + 60
while not os.path.exists(gate) and time.time() < deadline:
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    i += 1
    time.sleep(0.05)
raise RuntimeError("checkpoint shard 3 is corrupt")
