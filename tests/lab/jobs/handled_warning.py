"""Logs a caught exception with its traceback at WARNING and trains on to a clean exit 0.

``logging``'s default format (``WARNING:dashboard:…``) on stderr, the traceback after it, as
``logger.warning("…", exc_info=True)`` prints it.  A handled error is a finding, not a failure.
Usage: handled_warning.py [STEPS] [INTERVAL]
"""

import logging
import sys
import time

logging.basicConfig()  # WARNING:name:message on stderr
log = logging.getLogger("dashboard")


def push(step: int) -> None:
    raise ConnectionError(f"dashboard at 10.0.0.7:8080 refused the connection (step {step})")


def train(steps: int, interval: float) -> None:
    for step in range(1, steps + 1):
        print(f"step {step} loss {2.5 - step * 0.01:.3f}", flush=True)
        if step == 5:
            try:
                push(step)
            except ConnectionError:
                log.warning("push to dashboard failed, will retry", exc_info=True)
        time.sleep(interval)


if __name__ == "__main__":
    train(int(sys.argv[1]) if len(sys.argv) > 1 else 40, float(sys.argv[2]) if len(sys.argv) > 2 else 0.05)
