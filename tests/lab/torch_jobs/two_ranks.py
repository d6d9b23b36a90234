"""Two ranks (gloo, CPU) each compiling the same function: one trace file per rank."""

import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, store_path):
    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=world)

    @torch.compile(backend="eager")
    def step(x):
        return x * (rank + 1) - 1

    step(torch.ones(3))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    store = os.path.join(tempfile.mkdtemp(), "store")
    mp.spawn(run, args=(2, store), nprocs=2)
    print("two_ranks done", file=sys.stderr)
