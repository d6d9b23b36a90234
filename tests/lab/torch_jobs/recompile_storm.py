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
