"""Three progress lines, then the trainer's own exit status 127 (a command it ran was not found)."""

import sys

for i in range(3):
    print(f"step {i} loss {2.0 - i * 0.01:.3f}", flush=True)
print("error: the data tool `shardctl` is not installed", flush=True)
sys.exit(127)
