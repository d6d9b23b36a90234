"""A tqdm-style bar on stderr, redrawn with carriage returns, then a crash (tests/test_redteam_r11_bar_crash_lab.py).

``python3 r11_bar_crash.py GATE HOW`` redraws ``N/1000 [..., 20.00it/s, loss=…]`` every 50 ms with
``\\r`` and no newline until GATE exists (or for 20 redraws when GATE is ``-``), then HOW ``raise``:
an uncaught ``ValueError`` whose traceback Python prints on the bar's unfinished line (``…it/s,
loss=0.05]Traceback (most recent call last):``), as a real log shows a crash inside ``for b in
tqdm(loader)``; ``until``: redraws until GATE exists, then the bar's closing newline and exit 0.
"""

import os
import sys
import time

gate, how = sys.argv[1], sys.argv[2]


def train_step(n: int) -> float:
    if how == "raise" and ((n > 20) if gate == "-" else os.path.exists(gate)):
        raise ValueError("Expected input batch_size (32) to match target batch_size (16).")
    return 1.0 / n


def main() -> None:
    print("loading the model", flush=True)
    n = 0
    while True:
        n += 1
        loss = train_step(n)
        sys.stderr.write(f"\r{n // 10:3d}%|#         | {n}/1000 [00:{n // 20:02d}<00:50, 20.00it/s, loss={loss:.3f}]")
        sys.stderr.flush()
        if how == "until" and os.path.exists(gate):
            break
        time.sleep(0.05)
    sys.stderr.write("\n")


if __name__ == "__main__":
    main()
