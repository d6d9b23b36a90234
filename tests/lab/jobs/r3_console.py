"""A job that writes its own log; its console (stderr) gets the thread tracebacks.

``r3_console.py LOG STEPS LOADERS_AT RAISE_AT INTERVAL``: writes ``step N loss X`` to LOG every
INTERVAL seconds; at step LOADERS_AT two data-loader threads die with ``KeyError`` (their
tracebacks go to stderr, the console capture); at step RAISE_AT the main loop raises
``RuntimeError`` (exit 1); 0 for either: never; after STEPS steps it exits 0."""

import sys
import threading
import time

log_path, steps, loaders_at, raise_at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
interval = float(sys.argv[5])
shards: dict[str, int] = {"shard-0": 0}


def loader(key: str) -> None:
    time.sleep(0.05)
    print(shards[key])  # KeyError: the shard index is wrong


with open(log_path, "a", buffering=1) as log:
    for i in range(1, steps + 1):
        log.write(f"step {i} loss {2.5 / i:.4f}\n")
        if i == loaders_at:
            for k in ("shard-7", "shard-9"):
                threading.Thread(target=loader, args=(k,), name=f"loader-{k[-1]}").start()
        if i == raise_at:
            raise RuntimeError(f"batch {i} has no labels")
        time.sleep(interval)
