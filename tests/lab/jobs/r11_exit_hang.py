"""A trainer that reaches its end and then hangs at interpreter exit (tests/test_redteam_r11_exit_hang_lab.py).

``python3 r11_exit_hang.py STEPS HOW`` prints ``step N loss X`` every 50 ms for STEPS steps, then
``training finished``, and returns from its main thread while something it started holds the
process for ever: HOW ``thread`` (a non-daemon prefetch thread blocked on ``queue.Queue().get()``:
Python's shutdown joins it) or ``mp`` (a ``multiprocessing`` child blocked the same way: the atexit
handler joins it).
"""

import multiprocessing
import queue
import sys
import threading
import time

steps, how = int(sys.argv[1]), sys.argv[2]


def wait_for_work(q: "queue.Queue[int]") -> None:
    q.get()  # nobody ever puts: the prefetcher waits for ever


def main() -> None:
    if how == "thread":
        threading.Thread(target=wait_for_work, args=(queue.Queue(),), name="prefetch-0").start()
    else:
        multiprocessing.Process(target=wait_for_work, args=(multiprocessing.Queue(),), name="prefetch-0").start()
    for step in range(1, steps + 1):
        print(f"step {step} loss {1.0 / step:.4f}", flush=True)
        time.sleep(0.05)
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
