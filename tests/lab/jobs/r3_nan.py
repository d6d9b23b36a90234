"""A training loop whose loss turns NaN and goes on (alive, printing progress): a diverged run.

``r3_nan.py STEPS NAN_AT INTERVAL``: prints ``step N loss X grad_norm Y`` every INTERVAL seconds;
from step NAN_AT both are ``nan``; exits 0 after STEPS steps (0: runs until stopped)."""

import sys
import time

steps, nan_at, interval = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
i = 0
while steps == 0 or i < steps:
    i += 1
    loss, gn = (f"{2.5 / i:.4f}", "0.93") if i < nan_at else ("nan", "nan")
    print(f"step {i} loss {loss} grad_norm {gn}", flush=True)
    time.sleep(interval)
