"""A job that wipes its output directory once it runs (tests/test_redteam_wiped_outputs_lab.py).

``python3 wiped_outputs.py GATE MODE`` prints ``step N loss X`` every 50 ms until GATE exists, then
does what ``overwrite_output_dir`` does in many training scripts: ``shutil.rmtree`` of the output
directory (here the one its log is in, with cockpit's pid and exit files beside it) and
``os.makedirs`` again, and trains on.  MODE ``crash``: five more steps, then an uncaught exception
(exit 1); ``run``: steps until ``GATE.end`` exists, then exit 0.
"""

import os
import shutil
import sys
import time

gate, mode = sys.argv[1], sys.argv[2]
i = 0
while not os.path.exists(gate):
    print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
    i += 1
    time.sleep(0.05)
out = os.path.dirname(os.readlink("/proc/self/fd/1"))
shutil.rmtree(out)
os.makedirs(out)
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
