"""Trains and saves a checkpoint every 10 steps into DIR until that filesystem is full.

The write fails with ENOSPC for real; the job then raises what ``torch.save`` raises on a full
disk (PyTorch's stream writer never says ENOSPC): ``RuntimeError: [enforce fail at
inline_container.cc:626] . unexpected pos 1472 vs 1366``.  Usage: ckpt_full.py DIR [BYTES] [EVERY]
(a checkpoint of BYTES every EVERY steps: small ones every step run out of inodes first).
"""

import errno
import os
import sys
import time

CKPT_DIR = sys.argv[1]
SIZE = int(sys.argv[2]) if len(sys.argv) > 2 else 256 * 1024
EVERY = int(sys.argv[3]) if len(sys.argv) > 3 else 10


def save(step: int) -> None:
    path = os.path.join(CKPT_DIR, f"ckpt-{step}.pt")
    try:
        with open(path, "wb") as f:
            f.write(os.urandom(SIZE))
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise RuntimeError("[enforce fail at inline_container.cc:626] . unexpected pos 1472 vs 1366") from None


def main() -> None:
    for step in range(1, 1000):
        print(f"step {step} loss {2.5 - step * 0.001:.3f}", flush=True)
        if step % EVERY == 0:
            save(step)
        time.sleep(0.01)


if __name__ == "__main__":
    main()
