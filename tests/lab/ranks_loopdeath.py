#!/usr/bin/env python3
"""Two "ranks" of a distributed job, as torchrun prints them: one whose loop dies, one that waits.

Usage: ``ranks_loopdeath.py CRASH_AT [INTERVAL]``.  Rank 0 (this process) forks rank 1; each
writes every line with torchrun's ``[rankN]:`` prefix.  Both print steps; at step CRASH_AT rank
1 starts a non-daemon thread that names itself ``pt_nccl_watchdg`` (as PyTorch's NCCL watchdog
does) and its main thread really raises ``FloatingPointError``, so the interpreter prints the
traceback (prefixed) and then waits for that thread for ever; rank 0 blocks for ever, as a rank
does in an all-reduce whose peer never comes.  Nothing exits by itself.  Stdlib only.
"""

import ctypes
import os
import sys
import threading
import time


class Prefixed:
    """A text stream that writes whole lines, each with the rank's prefix (torchrun's tee does this)."""

    def __init__(self, fd, prefix):
        self.fd, self.prefix, self.buf = fd, prefix, ""

    def write(self, s):
        self.buf += s
        *lines, self.buf = self.buf.split("\n")
        for line in lines:
            os.write(self.fd, f"{self.prefix}{line}\n".encode())
        return len(s)

    def flush(self):
        pass


def watchdog():
    ctypes.CDLL(None).prctl(15, b"pt_nccl_watchdg", 0, 0, 0)  # PR_SET_NAME: /proc/PID/task/TID/comm
    threading.Event().wait()


def main():
    crash_at = int(sys.argv[1])
    interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
    rank = 1 if os.fork() == 0 else 0
    sys.stdout = sys.stderr = Prefixed(1, f"[rank{rank}]:")
    for step in range(1, crash_at):
        print(f"step {step} loss {2.5 - step / 1000:.4f}")
        time.sleep(interval)
    if rank == 0:
        threading.Event().wait()  # in the all-reduce of step CRASH_AT, waiting for rank 1
    threading.Thread(target=watchdog, name="pt_nccl_watchdg").start()
    raise FloatingPointError(f"loss is nan at step {crash_at}")


if __name__ == "__main__":
    main()
