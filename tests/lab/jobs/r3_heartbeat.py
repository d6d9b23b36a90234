"""A training loop that deadlocks while a heartbeat thread keeps logging: a hang hidden by chatter.

``r3_heartbeat.py STEPS INTERVAL [--stamp]``: STEPS progress lines (``step N loss X``) every
INTERVAL seconds, then the main thread waits for ever on a lock it holds; a daemon thread logs
``heartbeat`` every 0.5 s.  ``--stamp``: every line starts with ``YYYY-MM-DD HH:MM:SS`` (local
time, as Python logging's default format)."""

import sys
import threading
import time

steps, interval, stamp = int(sys.argv[1]), float(sys.argv[2]), "--stamp" in sys.argv


def say(text: str) -> None:
    print((time.strftime("%Y-%m-%d %H:%M:%S ") if stamp else "") + text, flush=True)


def heartbeat() -> None:
    while True:
        time.sleep(0.5)
        say("INFO heartbeat: worker alive")


threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()
for i in range(1, steps + 1):
    say(f"step {i} loss {2.5 / i:.4f}")
    time.sleep(interval)
lock = threading.Lock()
lock.acquire()
lock.acquire()  # the deadlock: the loop never comes back
