"""A job that writes one 10 MB line without a newline, then binary bytes, then a traceback.

``python3 huge_line.py``: 5 progress lines, 10 MB of ``x`` with no newline, a newline, invalid UTF-8
and NUL bytes, a newline, then raises ``ValueError`` (a traceback, exit 1).
"""

import sys
import time

for i in range(5):
    print(f"step {i} loss {2.0 - i * 0.001:.4f}", flush=True)
    time.sleep(0.05)
out = sys.stdout.buffer
out.write(b"x" * (10 << 20))
out.write(b"\n\xff\xfe\x00\x80binary\xc3\x28\x00\n")
out.flush()
raise ValueError("bad shard header in data-00042.bin")
