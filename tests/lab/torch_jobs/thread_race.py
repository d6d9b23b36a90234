"""Two threads calling compiled functions for the first time at once (the race the demo story is
about): dynamo compiles for each thread; the trace shows compiles from two threads."""

import threading

import torch


def make(scale):
    @torch.compile(backend="eager")
    def step(x):
        return x * scale + 1
    return step


barrier = threading.Barrier(2)


def worker(step, n):
    barrier.wait()
    for _ in range(3):
        step(torch.ones(n))


threads = [threading.Thread(target=worker, args=(make(i + 2), 4 + i), name=f"drafter-{i}") for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("thread_race done")

# Out without the interpreter's teardown of torch's thousands of modules (a second of CPU, more on a
# loaded machine, before the job counts as ended); the exit handlers still run (logging's flush among
# them), and only the success path gets here, so a job that raised still exits non-zero.  Imported
# here, at the end, so that the lines above keep the numbers the tests and the recorded traces name.
import atexit  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

sys.stdout.flush()
atexit._run_exitfuncs()
os._exit(0)
