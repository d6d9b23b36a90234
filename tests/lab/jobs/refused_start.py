"""A trainer that fails the way a real one does before or between its steps
(tests/test_redteam_usage_error_lab.py, tests/test_redteam_first_error_lab.py).

``python3 refused_start.py MODE``:

- ``argparse``: a real ``argparse`` parser refuses ``--lr-sched cosine`` (its usage line, then
  ``train.py: error: unrecognized arguments: …``, exit 2);
- ``click``: click's refusal of the same option, its text as click 8 prints it, exit 2;
- ``stdin``: five steps, then a real ``input()`` prompt (a ``trust_remote_code`` question) that
  reads the job's stdin: ``EOFError``, the traceback on the prompt's line;
- ``enospc``: fifteen steps, then a checkpoint written to ``/dev/full``: the kernel's own ENOSPC;
- ``edquot``: fifteen steps, then the ``OSError`` of a write over the user's disk quota;
- ``oom-nccl``: fifteen steps, then rank 1's ``torch.OutOfMemoryError`` and rank 0's NCCL
  watchdog timeout after it, as torchrun's prefixed output interleaves them (PyTorch 2.5's text).
"""

import argparse
import sys
import time

mode = sys.argv[1]


def steps(n: int) -> None:
    for i in range(n):
        print(f"step {i} loss {1.0 / (i + 1):.4f}", flush=True)
        time.sleep(0.03)


def save_checkpoint(path: str) -> None:
    with open(path, "wb") as f:
        f.write(b"\0" * (1 << 16))


if mode == "argparse":
    parser = argparse.ArgumentParser(prog="train.py")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--epochs", type=int, default=10)
    parser.parse_args(["--lr", "1e-4", "--lr-sched", "cosine"])
elif mode == "click":
    sys.stderr.write("Usage: train.py [OPTIONS]\nTry 'train.py --help' for help.\n\n"
                     "Error: No such option: --lr-sched Did you mean --lr?\n")
    sys.exit(2)
elif mode == "stdin":
    steps(5)
    answer = input("The repository for tiny-model contains custom code. Do you wish to run the custom code? [y/N] ")
elif mode == "enospc":
    steps(15)
    print("saving checkpoint-15", flush=True)
    save_checkpoint("/dev/full")
elif mode == "edquot":
    steps(15)
    print("saving checkpoint-15", flush=True)
    raise OSError(122, "Disk quota exceeded")
elif mode == "oom-nccl":
    steps(15)
    sys.stderr.write("""[rank1]: Traceback (most recent call last):
[rank1]:   File "/workspace/train.py", line 212, in <module>
[rank1]:     loss = model(batch).loss
[rank1]:   File "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl
[rank1]:     return self._call_impl(*args, **kwargs)
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB \
of which 1.23 GiB is free. Process 4242 has 77.91 GiB memory in use. Of the allocated memory 75.20 GiB is allocated by PyTorch, \
and 1.51 GiB is reserved by PyTorch but unallocated.
""")
    sys.stderr.flush()
    time.sleep(0.2)
    sys.stderr.write("""[rank0]:[E1118 10:12:01.123456789 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: \
WorkNCCL(SeqNum=4127, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.
[rank0]:[E1118 10:12:01.123598765 ProcessGroupNCCL.cpp:630] [Rank 0] Some NCCL operations have failed or timed out. Due to the \
asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with exception: [Rank 0] Watchdog \
caught collective operation timeout: WorkNCCL(SeqNum=4127, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for \
600021 milliseconds before timing out.
""")
    sys.exit(1)
