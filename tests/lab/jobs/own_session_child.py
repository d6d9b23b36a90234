"""A wrapper whose trainer runs in a session of its own (tests/test_redteam_own_session_lab.py).

``python3 own_session_child.py PIDFILE`` starts the trainer, itself with ``trainer`` as its first
argument, with ``subprocess.Popen(start_new_session=True)`` (as wrappers that shield their child from
the terminal's signals do), writes the trainer's pid to PIDFILE and waits for it.  The trainer
prints ``step N loss X`` every 100 ms for a minute.
"""

import subprocess
import sys
import time

if sys.argv[1] == "trainer":
    for i in range(600):
        print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
        time.sleep(0.1)
    sys.exit(0)
child = subprocess.Popen([sys.executable, __file__, "trainer"], start_new_session=True)
with open(sys.argv[1], "w") as f:
    f.write(str(child.pid))
sys.exit(child.wait())
