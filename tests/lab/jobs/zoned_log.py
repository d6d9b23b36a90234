"""A trainer that stamps its lines with its own zone's local time (tests/test_redteam_log_zone_lab.py).

``python3 zoned_log.py`` prints ``YYYY-MM-DD HH:MM:SS step N loss X`` every 100 ms, the time in
the job's own zone (``TZ`` from its environment, as ``logging``'s default formatter does; a job that
logs UTC with ``converter = time.gmtime`` on a machine whose zone is east of UTC reads the same).
"""

import time

i = 0
while True:
    print(time.strftime("%Y-%m-%d %H:%M:%S") + f" step {i} loss {1.0 / (i + 1):.4f}", flush=True)
    i += 1
    time.sleep(0.1)
