"""A trainer that saves a checkpoint when it is asked to stop, then exits 0 on its own.

As Lightning, Hugging Face's Trainer and most cluster-aware loops do: a SIGTERM handler only sets a
flag; the loop finishes its step, says it saves a checkpoint (2 s, during which SIGTERM changes
nothing), says it is done and exits 0.  ``python3 term_checkpoint.py``: ``step N loss X`` every
50 ms until then.
"""

import signal
import time

stop = False


def on_term(signum: int, frame: object) -> None:
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
i = 0
while not stop:
    print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
    i += 1
    time.sleep(0.05)
print(f"SIGTERM received: saving a checkpoint at step {i}", flush=True)
time.sleep(2.0)  # writing the checkpoint
print("checkpoint saved; exiting", flush=True)
