"""torchrun whose worker was SIGKILLed (tests/test_redteam_r13_torchrun_signal_lab.py).

``python3 r13_torchrun_killed.py GATE`` is the agent: it runs one worker (a real child process) that
prints ``step N loss X`` every 50 ms until GATE exists, then is killed by SIGKILL (here it sends it
to itself; in life the OOM killer does).  The agent then writes what torchrun writes (PyTorch 2.x):
its ``failed (exitcode: -9)`` record, its own uncaught ``ChildFailedError`` traceback and the report
whose root cause says ``Signal 9 (SIGKILL) received by PID N``, and exits 1.
"""

import datetime
import subprocess
import sys

WORKER = r"""
import os, sys, time
gate = sys.argv[1]
step = 0
while not os.path.exists(gate):
    step += 1
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    time.sleep(0.05)
os.kill(os.getpid(), 9)
"""

err = sys.stderr
print("W0501 12:00:00.100000 140 torch/distributed/run.py:779] Setting OMP_NUM_THREADS environment variable for each "
      "process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal "
      "performance in your application as needed.", file=err, flush=True)
worker = subprocess.Popen([sys.executable, "-c", WORKER, sys.argv[1]])
rc = worker.wait()
ts = datetime.datetime.now().strftime("%Y-%m-%d_%H:%M:%S")
lib = "/usr/local/lib/python3.10/dist-packages/torch/distributed"
err.write(f"""E0501 12:00:02.456000 140 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: {rc}) local_rank: 0 (pid: {worker.pid}) of binary: /usr/bin/python3
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "{lib}/elastic/multiprocessing/errors/__init__.py", line 348, in wrapper
    return f(*args, **kwargs)
  File "{lib}/run.py", line 901, in main
    run(args)
  File "{lib}/run.py", line 892, in run
    elastic_launch(
  File "{lib}/launcher/api.py", line 133, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
  File "{lib}/launcher/api.py", line 264, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : {ts}
  host      : ct200
  rank      : 0 (local_rank: 0)
  exitcode  : {rc} (pid: {worker.pid})
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID {worker.pid}
============================================================
""")
err.flush()
sys.exit(1)
