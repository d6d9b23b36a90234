"""A trainer that prints its steps without flushing (tests/test_redteam_buffered_lab.py).

``python3 buffered_print.py`` prints ``step N loss X`` every 50 ms with a plain ``print`` and no
``-u``: into a file, Python's stdout is block-buffered (8 KiB), so under its default a line
reaches the log some 20 s after it was printed, in bursts of a few hundred.  Its first line says
what PYTHONUNBUFFERED it was given.
"""

import os
import time

print(f"PYTHONUNBUFFERED={os.environ.get('PYTHONUNBUFFERED', '')!r}")
for i in range(100000):
    print(f"step {i} loss {1.0 / (i + 1):.4f}")
    time.sleep(0.05)
