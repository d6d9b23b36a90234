"""A trainer whose log is larger than one reading before it crashes (tests/test_redteam_r12_big_log_lab.py).

``python3 r12_big_log_crash.py MIB`` prints ``step N loss X`` lines, then MIB MiB of long debug
lines (a verbose data loader's dump), then dies of an uncaught ``RuntimeError`` (a traceback, exit 1).
"""

import sys

mib = int(sys.argv[1])
for step in range(1, 4):
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
line = "DEBUG shard " + "x" * 8000 + "\n"
chunk = line * 128
for _ in range(mib * (1 << 20) // len(chunk) + 1):
    sys.stdout.write(chunk)
print("step 4 loss 0.2500", flush=True)
raise RuntimeError("CUDA error: an illegal memory access was encountered")
