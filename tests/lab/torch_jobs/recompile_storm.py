"""A function recompiled on every new input shape until dynamo's recompile limit (CPU, seconds)."""

import torch
import torch._dynamo.config as dcfg

LIMIT = 4
if hasattr(dcfg, "recompile_limit"):
    dcfg.recompile_limit = LIMIT
else:
    dcfg.cache_size_limit = LIMIT
dcfg.automatic_dynamic_shapes = False  # a fresh static shape each call: one recompile each


@torch.compile(backend="eager")
def grow(x):
    return x * 2 + 1


for n in range(1, LIMIT + 3):
    grow(torch.ones(n))
print("recompile_storm done")
