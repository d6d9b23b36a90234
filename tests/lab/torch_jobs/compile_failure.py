"""A compile that fails: a backend that raises, with suppress_errors off."""

import torch
import torch._dynamo.config as dcfg

dcfg.suppress_errors = False


def broken_backend(gm, example_inputs):
    raise RuntimeError("cockpit lab: backend refused this graph")


@torch.compile(backend=broken_backend)
def f(x):
    return x.cos() + 1


try:
    f(torch.ones(3))
except RuntimeError as e:  # the failure is the point of the case
    print("compile failed:", type(e).__name__)
print("compile_failure done")
