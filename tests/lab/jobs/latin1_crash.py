"""A trainer whose console is latin-1 (``PYTHONIOENCODING=latin-1``, as some cluster images set)
and whose crash names a path with non-ASCII letters (tests/test_redteam_latin1_lab.py).

``python3 latin1_crash.py``: ``step N loss X`` 20 times every 50 ms, a data-loader line holding a
NUL byte (a C library's fixed-width field printed whole), then opening ``/data/Übungen/shard-7.bin``
fails: an uncaught ``FileNotFoundError`` whose traceback reaches the log as latin-1 bytes
(``\\xdc``, not valid UTF-8), exit 1.
"""

import sys
import time

for i in range(20):
    print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
    time.sleep(0.05)
print("loader: shard header 'SHRD\x00\x00v2' read", flush=True)
sys.stdout.flush()
open("/data/Übungen/shard-7.bin", "rb")
