"""The trainer a launcher leaves behind (tests/test_launchers_lab.py).

``python3 launcher_train.py MODE STEPS INTERVAL [own-group]`` prints ``step N loss X`` every INTERVAL
seconds for STEPS steps, then by MODE: ``ok`` says it is done and exits 0, ``crash`` raises an
uncaught exception (a traceback, exit 1), ``hang`` stops printing and waits for ever.
``own-group`` first moves it to a process group of its own (``setpgid(0, 0)``, as
``subprocess.Popen(process_group=0)`` does): it leaves the launcher's group, not its session.
"""

import os
import sys
import time

mode, steps, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if sys.argv[4:] == ["own-group"]:
    os.setpgid(0, 0)
print(f"trainer pid {os.getpid()}: {mode}, {steps} steps", flush=True)
for i in range(1, steps + 1):
    print(f"step {i} loss {1.0 / i:.4f}", flush=True)
    time.sleep(interval)
if mode == "crash":
    raise RuntimeError("CUDA-free test failure: the optimizer state is corrupt")
if mode == "hang":
    while True:
        time.sleep(3600)
print("training done", flush=True)
