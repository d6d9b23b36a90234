"""torch.compile with ``suppress_errors = True``: dynamo's ``WON'T CONVERT`` warning, then eager.

PyTorch (torch/_dynamo/convert_frame.py) logs ``format_error_msg(...)`` with
``log.warning(error_msg, exc_info=True)`` through its glog-style formatter, which prefixes every
line of the record (``W1203 14:05:12.345000 4242 torch/_dynamo/convert_frame.py:1016] [0/0] ``):
the message (``WON'T CONVERT f FILE line N``, ``due to:``, the traceback) and the traceback
``exc_info`` appends.  This job prints that record as PyTorch does (no torch here), then trains on
to exit 0.  Usage: eager_fallback.py [STEPS] [INTERVAL]
"""

import os
import sys
import time

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
INTERVAL = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
TB = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3/dist-packages/torch/_dynamo/convert_frame.py", line 1064, in __call__',
    "    result = self._inner_convert(",
    '  File "/usr/lib/python3/dist-packages/torch/_dynamo/output_graph.py", line 1497, in _call_user_compiler',
    "    raise BackendCompilerFailed(",
    "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:",
    "RuntimeError: Compiler: cc is not found.",
    "",
    'Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information',
    "",
]


def warn_wont_convert() -> None:
    t = time.time()
    prefix = (f"W{time.strftime('%m%d %H:%M:%S', time.localtime(t))}.{int(t % 1 * 1e6):06d} {os.getpid()} "
              "torch/_dynamo/convert_frame.py:1016] [0/0]")
    here = os.path.abspath(__file__)
    lines = [f"WON'T CONVERT forward {here} line {forward.__code__.co_firstlineno} ", "due to: ", *TB, "", *TB[:7]]
    sys.stderr.write("".join(f"{prefix} {line}\n" for line in lines))
    sys.stderr.flush()


def forward(step: int) -> float:
    return 2.5 - step * 0.01


for step in range(1, STEPS + 1):
    if step == 1:
        warn_wont_convert()  # the first call compiles, fails, and runs eagerly from then on
    print(f"step {step} loss {forward(step):.3f}", flush=True)
    time.sleep(INTERVAL)
