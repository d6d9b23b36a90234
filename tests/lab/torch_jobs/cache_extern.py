"""A clean function compiled with inductor whose graph is one extern kernel (a matmul): the FX graph
and AOTAutograd caches are looked up and written as for any inductor compile, but no C++ kernel is
built, so a cold run takes seconds on a CPU.  Run twice with the same TORCHINDUCTOR_CACHE_DIR: the
first run is cold (every lookup a miss), the second warm (hits).

The joint-graph passes are off: a cold compile otherwise first builds inductor's pattern-matcher
tables (the attention fusions: over a second of CPU) that a lone matmul never uses.  Both lookups, their
keys and what is written to the cache stay as they are."""

import torch
import torch._inductor.config as icfg

icfg.use_joint_graph_passes = False


@torch.compile
def project(x, w):
    return x @ w


print(project(torch.ones(4, 8), torch.ones(8, 3)).sum().item())
print("cache_extern done")

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
