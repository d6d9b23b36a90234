"""A trainer whose data-loader worker is SIGKILLed from outside (tests/test_redteam_r10_worker_killed_lab.py).

``python3 r10_worker_killed.py GATE MODE`` starts one worker (``multiprocessing``, forked, a child
that sleeps in a loop), writes its pid to ``GATE.pid`` and prints ``step N loss X`` every 50 ms.
Once the worker is gone (the test SIGKILLs it, as the OOM killer does) it goes on by MODE:
``on`` (trains on until ``GATE`` exists, then exits 0: a pool that does without it), ``raise`` (at
its next step dies as PyTorch 1.x's main process does, ``_error_if_any_worker_fails`` in the
SIGCHLD handler raising ``RuntimeError: DataLoader worker (pid N) is killed by signal: Killed.``,
exit 1).
"""

import multiprocessing
import os
import sys
import time

gate, mode = sys.argv[1], sys.argv[2]


def work() -> None:
    while True:
        time.sleep(1)


def _error_if_any_worker_fails(pid: int) -> None:
    raise RuntimeError(f"DataLoader worker (pid {pid}) is killed by signal: Killed. ")


def next_batch(worker: multiprocessing.Process) -> None:
    if not worker.is_alive() and mode == "raise":
        _error_if_any_worker_fails(worker.pid or 0)


if __name__ == "__main__":
    worker = multiprocessing.get_context("fork").Process(target=work, daemon=True)
    worker.start()
    with open(gate + ".pid.tmp", "w") as f:
        f.write(str(worker.pid))
    os.rename(gate + ".pid.tmp", gate + ".pid")
    step = 0
    while not os.path.exists(gate):
        next_batch(worker)
        print(f"step {step} loss {1.0 / (step + 1):.4f}", flush=True)
        step += 1
        time.sleep(0.05)
    print("training done", flush=True)
