"""A trainer that logs its steps to a file of its own and floods its console before it crashes
(tests/test_redteam_r12_big_log_lab.py).

``python3 r12_console_crash.py LOGFILE MIB`` writes ``step N loss X`` lines to LOGFILE, then MIB MiB
of long debug lines to stdout (its console), then dies of an uncaught ``RuntimeError`` (the
traceback on stderr, the console too; exit 1).
"""

import sys

path, mib = sys.argv[1], int(sys.argv[2])
with open(path, "a") as log:
    for step in range(1, 4):
        log.write(f"step {step} loss {1.0 / step:.4f}\n")
line = "DEBUG shard " + "x" * 8000 + "\n"
chunk = line * 128
for _ in range(mib * (1 << 20) // len(chunk) + 1):
    sys.stdout.write(chunk)
sys.stdout.flush()
raise RuntimeError("CUDA error: an illegal memory access was encountered")
