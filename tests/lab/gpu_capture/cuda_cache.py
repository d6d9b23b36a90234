"""A small CUDA training loop under torch.compile: tests/lab/gpu_capture/run.sh runs it twice on one
inductor cache (cold, then warm) for the real-GPU trace fixtures (tests/fixtures/torch_trace/cuda_cache_*)."""
import sys

import torch

dev = "cuda"
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
cm = torch.compile(m)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
for i in range(steps):
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    loss = torch.nn.functional.cross_entropy(cm(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {i} loss {loss.item():.4f}", flush=True)
