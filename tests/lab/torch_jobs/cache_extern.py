"""A clean function compiled with inductor whose graph is one extern kernel (a matmul): the FX graph
and AOTAutograd caches are looked up and written as for any inductor compile, but no C++ kernel is
built, so a cold run takes seconds on a CPU.  Run twice with the same TORCHINDUCTOR_CACHE_DIR: the
first run is cold (every lookup a miss), the second warm (hits)."""

import torch


@torch.compile
def project(x, w):
    return x @ w


print(project(torch.ones(4, 8), torch.ones(8, 3)).sum().item())
print("cache_extern done")
