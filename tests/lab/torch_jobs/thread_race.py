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
