"""A healthy job whose progress the default ``progress_pattern`` cannot see: ``--mode iter`` prints
``iter N loss X`` lines (another format), ``--mode file`` writes its steps to ``progress.txt``
beside it and only a banner to its log (another file).  Runs until it is stopped."""

import argparse
import time

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=("iter", "file"), default="iter")
a = ap.parse_args()
print("loading the dataset: 1,024 shards", flush=True)
print("model ready: 12.3M parameters", flush=True)
with open("progress.txt", "a", encoding="utf-8") as side:
    n = 0
    while True:
        n += 1
        if a.mode == "iter":
            print(f"iter {n} loss {3.0 / n:.4f}", flush=True)
        else:
            side.write(f"step {n} loss {3.0 / n:.4f}\n")
            side.flush()
        time.sleep(0.05)
