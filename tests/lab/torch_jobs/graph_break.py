"""A graph break inside a compiled function (a data-dependent branch on ``.item()``), and the same
code in a second function under ``fullgraph=True`` (where the break is a compile error)."""

import torch
import torch._dynamo.config as dcfg

dcfg.capture_scalar_outputs = False


@torch.compile(backend="eager")
def branchy(x):
    y = x.sin()
    if y.sum().item() > 0:  # data-dependent: dynamo breaks the graph here
        return y * 2
    return y - 1


@torch.compile(backend="eager", fullgraph=True)
def strict(x):
    y = x.cos()
    if y.sum().item() > 0:  # the same break, refused under fullgraph
        return y * 2
    return y - 1


branchy(torch.ones(4))
try:
    strict(torch.ones(4))
except RuntimeError as e:  # the fullgraph error is the point of the case
    print("fullgraph error:", type(e).__name__)
print("graph_break done")

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
