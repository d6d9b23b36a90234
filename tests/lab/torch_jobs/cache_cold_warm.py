"""A clean function compiled with inductor; run it twice with the same TORCHINDUCTOR_CACHE_DIR:
the first run is cold (every cache a miss), the second warm (hits)."""

import torch


@torch.compile
def clean(x, w):
    return torch.relu(x @ w).sum(dim=-1)


print(clean(torch.ones(4, 8), torch.ones(8, 3)))
print("cache_cold_warm done")
