"""A job whose log is rotated in place under it, as logrotate's ``copytruncate`` does: the log
copied to ``LOG.1`` and truncated to zero while the job goes on writing to it (its ``>>`` stdout,
so the next bytes land at the new start).  Its crash's traceback, written right after, lies where
the old log's first bytes were; the lines its exit handlers print after it carry the file past the
old size, so a reader that went on from its old offset saw only their middle.

``python3 copytruncate_log.py GATE``: 5 ``step`` lines, then quiet until the file GATE exists;
then the rotation, the traceback and the exit handlers' lines in one write, and exit 1.
"""

import os
import shutil
import sys
import time

gate = sys.argv[1]
log = os.readlink("/proc/self/fd/1")
for i in range(5):
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
deadline = time.time() + 60
while not os.path.exists(gate) and time.time() < deadline:
    time.sleep(0.02)
shutil.copyfile(log, log + ".1")
crash = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    state = load_checkpoint(path)\n"
    "RuntimeError: checkpoint shard 3 is corrupt\n"
) + "".join(f"wandb: uploading artifact part {n} of 12\n" for n in range(12))
os.truncate(log, 0)
os.write(1, crash.encode())  # one write: a reader sees the log empty (truncated) or with all of it
sys.exit(1)
