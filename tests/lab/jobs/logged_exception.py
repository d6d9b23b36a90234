"""A trainer that logs a caught exception with ``logger.exception`` and trains on after a slow recovery.

``python3 logged_exception.py GATE [plain]``: logs ``step N loss X`` every 50 ms (Hugging Face's
format: ``%(asctime)s - %(name)s - %(levelname)s - %(message)s``, on stderr; ``plain``: a format
without the level, ``%(asctime)s [%(name)s] %(message)s``) until GATE exists; then a data shard
fails to decode: the ``OSError`` is caught and logged at ERROR with its traceback
(``logger.exception``; the loop is at the script's top level, so the traceback reads as an
uncaught one: ``<module>`` outermost), the dataset is reopened without that shard (3 s with no
line, longer than any teardown), and the loop trains on until ``GATE.end`` exists, then exits 0.
"""

import logging
import os
import sys
import time

gate = sys.argv[1]
plain = sys.argv[2:] == ["plain"]
fmt = "%(asctime)s [%(name)s] %(message)s" if plain else "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
logging.basicConfig(level=logging.INFO, format=fmt)
log = logging.getLogger("train")


def next_batch(i: int, bad: set[int]) -> int:
    shard = i // 10
    if os.path.exists(gate) and shard not in bad:
        bad.add(shard)
        raise OSError(f"shard-{shard:05d}.tar: unexpected end of data (truncated gzip member)")
    return shard


# the loop at the script's top level, as many training scripts have it: the caught exception's
# traceback starts at ``<module>``, as an uncaught one's does
bad: set[int] = set()
i = 0
while not os.path.exists(gate + ".end"):
    try:
        next_batch(i, bad)
    except OSError:
        log.exception("skipping a corrupt shard at batch %d", i)
        time.sleep(3.0)  # reopening the dataset without it
        log.info("dataset reopened without %d bad shard(s)", len(bad))
    log.info("step %d loss %.4f", i, 1.0 / (i + 1))
    i += 1
    time.sleep(0.05)
log.info("training done")
