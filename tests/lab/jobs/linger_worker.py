"""A trainer whose data-loader worker outlives it (tests/test_redteam_lingering_lab.py).

``python3 linger_worker.py END GATE`` forks a worker, prints ``step N loss X`` lines until the file
``GATE.end`` exists (the test creates it once cockpit has read the job alive with progress), and
ends by END: ``exit1`` (its own guard: a line, then ``sys.exit(1)``), ``sigkill`` (killed, as by the OOM
killer) or ``exit0`` (a clean end).  The worker notices its parent's death and lingers, as torch's
DataLoader workers do until their next five-second status check, here until the file GATE exists
(the test creates it once it has judged the job); on ``exit0`` it then writes the
``BrokenPipeError`` traceback a worker whose queue's reader is gone prints on its way out.
"""

import os
import signal
import sys
import time

end, gate = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.02)
    deadline = time.time() + 60  # never outlive a test that forgot the gate for long
    while not os.path.exists(gate) and time.time() < deadline:
        time.sleep(0.02)
    if end == "exit0":
        print("Traceback (most recent call last):\n"
              '  File "/usr/lib/python3.11/multiprocessing/queues.py", line 244, in _feed\n'
              "    send_bytes(obj)\n"
              "BrokenPipeError: [Errno 32] Broken pipe", flush=True)
    os._exit(0)
i = 0
deadline = time.time() + 60
while not os.path.exists(gate + ".end") and time.time() < deadline:
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    i += 1
    time.sleep(0.03)
if end == "exit1":
    print("loss spike detected, aborting", flush=True)
    sys.exit(1)
if end == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(0)
