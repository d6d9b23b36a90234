"""A trainer that logs to a file of its own (tests/test_redteam_own_log_lab.py).

``python3 own_log.py LOGFILE [MODE]``: opens LOGFILE (``logging.FileHandler`` does the same, in
append mode) and writes ``step N loss X`` there every 50 ms for 60 s at most.  ``banner`` prints one
line to stdout first (``logging to LOGFILE``), as many do; ``quiet`` prints nothing at all.
"""

import logging
import sys
import time

path, mode = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "banner"
if mode == "banner":
    print(f"logging to {path}", flush=True)
log = logging.getLogger("train")
log.addHandler(logging.FileHandler(path))
log.setLevel(logging.INFO)
deadline, i = time.time() + 60, 0
while time.time() < deadline:
    log.info("step %d loss %.4f", i, 2.5 - i * 0.001)
    i += 1
    time.sleep(0.05)
