"""A healthy trainer whose log holds the words of a traceback as data
(tests/test_redteam_r10_traceback_data_lab.py).

``python3 r10_traceback_data.py KIND`` prints ``step N loss X`` 40 times, every 25 ms, and exits 0;
at step 5 it prints a sample of its dataset (code and its output, as a code model's trainer does)
by KIND: ``repr`` (one line, the sample's ``repr``: ``sample 17: 'Traceback (most recent call
last):\\n  File …'``), ``inline`` (one line whose text quotes a traceback's first line after other
words), ``oom`` (one line quoting a CUDA out-of-memory error after other words), ``raw`` (the
sample printed as it is, lines and all, after a ``sample 17:`` line: byte for byte a traceback the
job printed itself, and read as one).
"""

import sys
import time

kind = sys.argv[1]
SAMPLE = '''Traceback (most recent call last):
  File "solution.py", line 3, in <module>
    print(1 / 0)
ZeroDivisionError: division by zero'''

for step in range(40):
    if step == 5:
        if kind == "repr":
            print(f"sample 17: {SAMPLE!r}", flush=True)
        elif kind == "oom":
            print("sample 18: the model answered 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'",
                  flush=True)
        elif kind == "inline":
            print("sample 17: the model answered 'Traceback (most recent call last):' for a prompt with no error", flush=True)
        else:
            print(f"sample 17:\n{SAMPLE}\n--- end of sample 17", flush=True)
    print(f"step {step} loss {1.0 / (step + 1):.4f}", flush=True)
    time.sleep(0.025)
print("training done", flush=True)
