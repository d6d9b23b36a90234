"""Holds 4 GiB of GPU memory and keeps the GPU busy for a while (tests/lab/gpu_capture/run.sh):
``holder.py READY_FILE SECONDS``; READY_FILE is made once the memory is held."""
import sys
import time

import torch

x = torch.ones(1 << 30, device="cuda")  # 4 GiB
open(sys.argv[1], "w").close()
end = time.time() + float(sys.argv[2])
while time.time() < end:
    x.mul_(1.0000001)
torch.cuda.synchronize()
