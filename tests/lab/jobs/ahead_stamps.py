"""A trainer whose log stamps read an hour ahead of the target's clock, that hangs while a helper
thread chatters (tests/test_redteam_ahead_stamps_lab.py).

``python3 ahead_stamps.py GATE``: logs ``YYYY-MM-DD HH:MM:SS,mmm INFO step N loss X`` every 50 ms
(``logging``'s default ``asctime``, in the job's own zone: ``TZ`` from its environment, a zone east
of the target's, so the stamps read ahead of the target's clock) until GATE exists; then its main
thread waits for ever on a lock it holds (a deadlock), while a data-prefetch thread prints an
unstamped ``prefetch: 8/8 batches ready`` line every 200 ms.
"""

import logging
import os
import sys
import threading
import time

gate = sys.argv[1]
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")


def prefetch() -> None:
    while True:
        print("prefetch: 8/8 batches ready", flush=True)
        time.sleep(0.2)


i = 0
while not os.path.exists(gate):
    log.info("step %d loss %.4f", i, 1.0 / (i + 1))
    i += 1
    time.sleep(0.05)
threading.Thread(target=prefetch, name="prefetch", daemon=True).start()
lock = threading.Lock()
lock.acquire()
lock.acquire()  # a deadlock: the loop never steps again
