"""A trainer whose DataLoader worker was killed (tests/test_redteam_loader_killed_lab.py).

``python3 loader_killed.py KIND`` prints ``step N loss X`` 15 times, then dies as PyTorch's main
process does when the kernel killed one of its DataLoader workers: ``killed`` (SIGKILL, the OOM
killer's signal: ``DataLoader worker (pid N) is killed by signal: Killed.``), ``bus`` (SIGBUS
from a full ``/dev/shm``, PyTorch's ``Unexpected bus error encountered in worker`` first).  The
text is PyTorch 2.x's; the traceback goes through ``dataloader.py`` as there, exit 1.
"""

import sys
import time

kind = sys.argv[1]
for i in range(15):
    print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
    time.sleep(0.02)
if kind == "bus":
    print("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
          file=sys.stderr, flush=True)
why = "Killed" if kind == "killed" else ("Bus error. It is possible that dataloader's workers are out of shared memory. "
                                         "Please try to raise your shared memory limit")
sys.stderr.write(f"""Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1251, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py", line 73, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 4242) is killed by signal: {why}.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "train.py", line 88, in <module>
    for batch in loader:
  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1264, in _try_get_data
    raise RuntimeError(f"DataLoader worker (pid(s) {{pids_str}}) exited unexpectedly") from e
RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly
""")
sys.exit(1)
