"""Two ranks started with multiprocessing's ``spawn``: one crashes, the other waits in a barrier.

``python3 spawn_barrier.py GATE``: the parent spawns ranks 0 and 1 (``mp.get_context("spawn")``,
as ``torch.multiprocessing.spawn`` does) and joins them.  Each prints ``rank R step N loss X``
every 50 ms and meets the other in a ``Barrier`` every step (a collective).  Once GATE exists, rank
1 raises ``RuntimeError`` (multiprocessing prints its traceback, ``Process SpawnProcess-2:``, and
it exits 1); rank 0 waits in the barrier for ever, and the parent in its ``join``: the job hangs.
"""

import multiprocessing as mp
import multiprocessing.synchronize
import os
import sys
import time


def rank_main(rank: int, gate: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    i = 0
    while True:
        if rank == 1 and os.path.exists(gate):
            raise RuntimeError(f"CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity; rank {rank})")
        print(f"rank {rank} step {i} loss {1.0 / (i + 1):.4f}", flush=True)
        barrier.wait()
        i += 1
        time.sleep(0.05)


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=rank_main, args=(r, sys.argv[1], barrier)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    sys.exit(max(p.exitcode or 0 for p in procs))
