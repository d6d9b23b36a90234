"""A training loop that dies of an uncaught error while a worker thread ends the process with
``os._exit(0)`` (tests/test_redteam_r13b_thread_exit0_lab.py).

``python3 r13b_thread_exit0.py GATE [DELAY]``: prints ``step N loss X`` every 50 ms.  A non-daemon
"uploader" thread waits for the loop.  Once GATE exists the loop raises ``RuntimeError: CUDA error:
an illegal memory access was encountered``, uncaught: Python prints its traceback and the process
lives on, held by the uploader.  DELAY seconds later (default 0.5) the uploader logs ``uploader:
flushing and exiting`` and calls ``os._exit(0)``, as "exit fast, skip the atexit hooks" helpers of
checkpoint uploaders do: the exit status is 0, and no step ran after the error.
"""

import os
import sys
import threading
import time

gate = sys.argv[1]
delay = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
loop_done = threading.Event()


def uploader() -> None:
    loop_done.wait()
    time.sleep(delay)
    print("uploader: flushing and exiting", flush=True)
    os._exit(0)


threading.Thread(target=uploader, name="uploader").start()
step = 0
try:
    while not os.path.exists(gate):
        step += 1
        print(f"step {step} loss {1.0 / step:.4f}", flush=True)
        time.sleep(0.05)
    raise RuntimeError("CUDA error: an illegal memory access was encountered")
finally:
    loop_done.set()
