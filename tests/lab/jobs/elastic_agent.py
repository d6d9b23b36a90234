"""A torchrun-like agent that restarts its worker after a crash (tests/test_redteam_elastic_lab.py).

``python3 elastic_agent.py GATE`` is the agent: it runs a worker (``python3 elastic_agent.py GATE
worker N``, its child, writing to the same log) and waits for it.  Worker 0 prints ``step N loss X``
every 50 ms until GATE exists, then dies of an uncaught exception (a traceback from the program's
entry, exit 1).  The agent says it restarts the worker group, rendezvous and model loading take a
while (until ``GATE.restart`` exists), and worker 1 trains from step 0 again until ``GATE.end``
exists; then the agent exits 0.
"""

import os
import subprocess
import sys
import time

gate = sys.argv[1]


def wait(path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.02)


if sys.argv[2:3] == ["worker"]:
    first = sys.argv[3] == "0"
    i = 0
    while not os.path.exists(gate + (".end" if not first else "")):
        print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
        i += 1
        time.sleep(0.05)
    if first:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    sys.exit(0)

for n in range(2):
    rc = subprocess.call([sys.executable, __file__, gate, "worker", str(n)])
    if rc == 0:
        break
    print(f"WARNING:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. {1 - n}/2 attempts left;"
          " will restart worker group", file=sys.stderr, flush=True)
    wait(gate + ".restart")
print("training done", flush=True)
