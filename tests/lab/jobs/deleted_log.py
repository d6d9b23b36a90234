"""A job whose log file is deleted under it (tests/test_redteam_deleted_log_lab.py).

``python3 deleted_log.py GATE MODE`` prints ``step N loss X`` every 50 ms until GATE exists, then
deletes the file its stdout writes to (``rm train.log`` by hand, a cleanup script, a scratch disk
wiped) and trains on into the deleted file.  MODE ``crash``: five more steps, then an uncaught
exception (a traceback nobody can read any more, exit 1); ``run``: steps until ``GATE.end`` exists,
then exit 0.
"""

import os
import sys
import time

gate, mode = sys.argv[1], sys.argv[2]
i = 0
while not os.path.exists(gate):
    print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
    i += 1
    time.sleep(0.05)
os.unlink(os.readlink("/proc/self/fd/1"))
for j in range(i, i + 5):
    print(f"step {j} loss {1.0 / (j + 1):.4f}", flush=True)
    time.sleep(0.05)
if mode == "crash":
    raise RuntimeError("the optimizer state is corrupt")
while not os.path.exists(gate + ".end"):
    i += 1
    print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
    time.sleep(0.05)
print("training done", flush=True)
