"""A tqdm-style bar on stderr: carriage-return redraws, no newline until it closes.

``r3_tqdm.py UPDATES INTERVAL``: one redraw every INTERVAL seconds (``…it/s, loss=…``), then the
closing newline and exit 0."""

import sys
import time

updates, interval = int(sys.argv[1]), float(sys.argv[2])
print("loading the model", flush=True)
for n in range(1, updates + 1):
    pct = 100 * n // updates
    bar = "#" * (pct // 10)
    sys.stderr.write(f"\r{pct:3d}%|{bar:<10}| {n}/{updates} [00:{n:02d}<00:30,  2.00it/s, loss={2.5 / n:.3f}]")
    sys.stderr.flush()
    time.sleep(interval)
sys.stderr.write("\n")
