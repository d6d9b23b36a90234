"""A torchrun-like agent whose worker keeps crashing until its restarts run out
(tests/test_redteam_r10_elastic_give_up_lab.py).

``python3 r10_elastic_give_up.py GATE`` is the agent (``--max-restarts 2``): it runs a worker (its
child, writing to the same log) and waits for it.  Worker 0 prints ``step N loss X`` every 50 ms
until GATE exists, then dies of an uncaught ``ValueError`` (a traceback, exit 1); the agent says
it restarts the worker group and waits for ``GATE.N`` before each restart, and each restarted
worker trains from step 0 for 2 steps and dies the same way.  With no restart left, the agent
raises torchrun's ``ChildFailedError`` with its report and exits 1, as torchrun does.
"""

import os
import subprocess
import sys
import time

gate = sys.argv[1]
MAX_RESTARTS = 2


def wait(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.02)


def forward(batch: int) -> None:
    raise ValueError(f"Expected input batch_size (32) to match target batch_size ({batch})")


if sys.argv[2:3] == ["worker"]:
    first = sys.argv[3] == "0"
    i = 0
    while not os.path.exists(gate) if first else i < 2:
        print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
        i += 1
        time.sleep(0.05)
    forward(i)


class ChildFailedError(Exception):
    pass


for n in range(MAX_RESTARTS + 1):
    rc = subprocess.call([sys.executable, __file__, gate, "worker", str(n)])
    if rc == 0:
        print("training done", flush=True)
        sys.exit(0)
    if n == MAX_RESTARTS:
        break
    print(f"WARNING:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. {MAX_RESTARTS - n}/{MAX_RESTARTS}"
          " attempts left; will restart worker group", file=sys.stderr, flush=True)
    wait(f"{gate}.{n + 1}")
print("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary: /usr/bin/python3",
      file=sys.stderr, flush=True)
raise ChildFailedError("""
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-01_12:00:00
  host      : node1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 4242)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================""")
