#!/usr/bin/env python3
"""Training-job simulator for the cockpit lab (stdlib only; run as ``/usr/bin/python3 jobsim.py``).

Prints one line per step, flushed (``step 1 loss 2.3456 lr 3e-4``), and can start slowly, create
its log late, or crash the ways real training jobs do, with the same text and exit status:

  fx        drafter threads die with the torch.compile FX/dynamo race (the seed's bug)   exit 1
  oom       torch.OutOfMemoryError: CUDA out of memory                                  exit 1
  illegal   RuntimeError: CUDA error: an illegal memory access was encountered          exit 1
  import    ModuleNotFoundError: No module named 'flash_attn' (at startup)              exit 1
  syntax    SyntaxError in the training script (at startup)                             exit 1
  nccl      NCCL watchdog timeout, then abort()                                          SIGABRT
  segfault  Fatal Python error: Segmentation fault, then a real SIGSEGV                 SIGSEGV
  sigkill   killed with SIGKILL, no output at all (like the OOM killer)                 SIGKILL
  silent    exits with --exit-code (default 0) and no output                             code
  zl        the main thread exits while a worker thread lives on: ``ps`` shows ``Zl``    (runs)
  exc       the main loop raises RuntimeError: loss is NaN (a late crash in the code)    exit 1
  loopdeath the loop really raises FloatingPointError; 3 non-daemon threads live on   (runs)

``fx`` as the seed's pipeline did it: the drafter threads die at ``--crash-at`` (0: before the first
step) while the main loop goes on printing steps for ``--keep-stepping`` seconds (-1: for ever)
before it exits 1.  ``--interleave`` writes without a lock, each line's text and its newline apart,
so the threads' tracebacks and the step lines interleave *mid-line*, as CPython threads' writes
do.  A stdout line's text may also be cut in two (stdout to a file is block-buffered: its flushes
cut lines anywhere); a stderr line's text never is (``print`` and ``traceback`` write each line's
text in one call, and stderr is line-buffered).  Where the cuts fall depends on the thread and the
text only (``zlib.crc32``, not ``hash``, which changes with every process), so a log that misled a
judge can be made again.

``--gpu-mem MIB`` (with ``--gpu N``, ``--gpu-procs K``): the job "uses the GPU" as CUDA does: it
opens ``/dev/nvidiaN``, ``/dev/nvidiactl`` and ``/dev/nvidia-uvm`` where the container has them,
and holds a context the lab's nvidia-smi lists (see bin/nvidia-smi), from after ``--start-delay``
("the model is loaded") to its end; ``K`` > 1 forks K-1 more processes first (ranks), each with
its own context, which end with the job.

``--fixed-file PATH``: when that file exists and contains "fixed", the crash does not happen (a
deployed fix).  Tracebacks mimic CPython 3.11 with torch frames; they go to stderr, and with
``--log PATH`` both streams go to that file (like ``> log 2>&1``).
"""

import argparse
import math
import os
import random
import signal
import sys
import threading
import time
import zlib

SCRIPT = "/workspace/train_tl.py"
DRAFTER = "/workspace/drafter.py"
TORCH = "/usr/local/lib/python3.11/dist-packages/torch"
THREADING = "/usr/lib/python3.11/threading.py"

_print_lock = threading.Lock()


INTERLEAVE = [False]


def emit(text, stream=None):
    stream = stream or sys.stdout
    text = text if text.endswith("\n") else text + "\n"
    if INTERLEAVE[0]:
        # as CPython's threads really write: print() sends the text and its "\n" in two writes, and a
        # stdout block flush may cut the text once; without a lock, other threads' writes land in between
        rnd = random.Random(zlib.crc32(f"{threading.current_thread().name}\0{text}".encode()))
        cuttable = stream is sys.stdout
        for line in text.splitlines():
            cut = rnd.randint(1, len(line) - 1) if cuttable and len(line) > 8 and rnd.random() < 0.3 else len(line)
            for piece in (line[:cut], line[cut:], "\n"):
                if piece:
                    stream.write(piece)
                    stream.flush()
                    time.sleep(0.0003)
        return
    with _print_lock:
        stream.write(text)
        stream.flush()


def frame(path, line, func, code=None, caret=None):
    out = f'  File "{path}", line {line}, in {func}\n'
    if code is not None:
        out += f"    {code}\n"
        if caret:
            start = len(code) - len(code.lstrip()) if caret == "all" else code.index(caret)
            width = len(code.strip()) if caret == "all" else len(caret)
            out += "    " + " " * start + "^" * width + "\n"
    return out


MODULE_CALL = (
    frame(f"{TORCH}/nn/modules/module.py", 1736, "_wrapped_call_impl",
          "return self._call_impl(*args, **kwargs)", "self._call_impl(*args, **kwargs)")
    + frame(f"{TORCH}/nn/modules/module.py", 1747, "_call_impl",
            "return forward_call(*args, **kwargs)", "forward_call(*args, **kwargs)")
)


def tb_fx():
    return (
        "Traceback (most recent call last):\n"
        + frame(THREADING, 1038, "_bootstrap_inner", "self.run()", "all")
        + frame(THREADING, 975, "run", "self._target(*self._args, **self._kwargs)", "all")
        + frame(SCRIPT, 287, "drafter_worker", "logits = drafter(batch.input_ids, block_mask=block_mask)",
                "drafter(batch.input_ids, block_mask=block_mask)")
        + MODULE_CALL
        + frame(DRAFTER, 141, "forward", "h = layer(h, block_mask)", "layer(h, block_mask)")
        + MODULE_CALL
        + frame(DRAFTER, 88, "forward", "out = self.attn(q, k, v, block_mask=block_mask)",
                "self.attn(q, k, v, block_mask=block_mask)")
        + frame(f"{TORCH}/_dynamo/eval_frame.py", 554, "_fn", "raise RuntimeError(")
        + "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function. "
        "This is not supported at the moment.\n"
    )


def tb_main(step, tail_frames, exc_lines):
    return (
        "Traceback (most recent call last):\n"
        + frame(SCRIPT, 412, "<module>", "main()", "all")
        + frame(SCRIPT, 398, "main", "trainer.train(num_steps=args.steps)", "all")
        + frame(SCRIPT, 331, "train", "loss = self.train_step(batch, step)", "self.train_step(batch, step)")
        + tail_frames
        + exc_lines
    )


def tb_oom(step):
    tail = (
        frame(SCRIPT, 301, "train_step", "out = self.model(batch.input_ids, labels=batch.labels)",
              "self.model(batch.input_ids, labels=batch.labels)")
        + MODULE_CALL
        + frame("/usr/local/lib/python3.11/dist-packages/transformers/models/gemma2/modeling_gemma2.py", 1047,
                "forward", "logits = self.lm_head(hidden_states[:, -num_logits_to_keep:, :])",
                "self.lm_head(hidden_states[:, -num_logits_to_keep:, :])")
        + MODULE_CALL
        + frame(f"{TORCH}/nn/modules/linear.py", 125, "forward",
                "return F.linear(input, self.weight, self.bias)", "F.linear(input, self.weight, self.bias)")
    )
    exc = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        f"79.15 GiB of which 1.02 GiB is free. Process {os.getpid()} has 78.12 GiB memory in use. Of the allocated "
        "memory 74.50 GiB is allocated by PyTorch, and 2.13 GiB is reserved by PyTorch but unallocated. If reserved "
        "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
    )
    return tb_main(step, tail, exc)


def tb_illegal(step):
    tail = frame(SCRIPT, 309, "train_step", "loss.backward()", "all") + frame(
        f"{TORCH}/_tensor.py", 581, "backward", "torch.autograd.backward(", None
    ) + frame(f"{TORCH}/autograd/__init__.py", 347, "backward", "_engine_run_backward(", None) + frame(
        f"{TORCH}/autograd/graph.py", 825, "_engine_run_backward",
        "return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass", None
    )
    exc = (
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
        "\n"
    )
    return tb_main(step, tail, exc)


def tb_import():
    return (
        "Traceback (most recent call last):\n"
        + frame(SCRIPT, 14, "<module>", "from drafter import Drafter", "all")
        + frame(DRAFTER, 9, "<module>", "from flash_attn import flash_attn_func", "all")
        + "ModuleNotFoundError: No module named 'flash_attn'\n"
    )


def tb_syntax():
    return (
        f'  File "{SCRIPT}", line 233\n'
        "    if step % args.log_every == 0\n"
        "                                 ^\n"
        "SyntaxError: expected ':'\n"
    )


def nccl_text(step):
    seq = 1000 + step
    work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=262668288, NumelOut=262668288, "
            "Timeout(ms)=600000)")
    return (
        f"[rank0]:[E1202 01:21:07.153684 91451 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
        f"operation timeout: {work} ran for 600021 milliseconds before timing out.\n"
        f"[rank0]:[E1202 01:21:07.154002 91451 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        f"Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL work: "
        f"{seq}, last completed NCCL work: {seq - 1}.\n"
        "[rank0]:[E1202 01:21:07.154031 91451 ProcessGroupNCCL.cpp:630] [Rank 0] Some NCCL operations have failed "
        "or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.\n"
        "[rank0]:[E1202 01:21:07.154040 91451 ProcessGroupNCCL.cpp:636] [Rank 0] To avoid data inconsistency, we "
        "are taking the entire process down.\n"
        "[rank0]:[E1202 01:21:07.155390 91451 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 0] "
        f"Process group watchdog thread terminated with exception: [Rank 0] Watchdog caught collective operation "
        f"timeout: {work} ran for 600021 milliseconds before timing out.\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with "
        f"exception: [Rank 0] Watchdog caught collective operation timeout: {work} ran for 600021 milliseconds "
        "before timing out.\n"
    )


def segv_text():
    tid = threading.get_ident()
    return (
        "Fatal Python error: Segmentation fault\n"
        "\n"
        f"Current thread 0x{tid:016x} (most recent call first):\n"
        f'  File "{TORCH}/_inductor/runtime/triton_heuristics.py", line 1001 in run\n'
        f'  File "/tmp/torchinductor_root/3x/c3xk2mvzq4wzb7fl5yq2mxqj7vbfh2d5wqhx6o5v2y4q5y2lqzjf.py", line 412 in call\n'
        f'  File "{TORCH}/_inductor/output_code.py", line 466 in __call__\n'
        f'  File "{TORCH}/_functorch/_aot_autograd/runtime_wrappers.py", line 328 in runtime_wrapper\n'
        f'  File "{TORCH}/_dynamo/eval_frame.py", line 632 in _fn\n'
        f'  File "{SCRIPT}", line 301 in train_step\n'
        f'  File "{SCRIPT}", line 331 in train\n'
        f'  File "{SCRIPT}", line 398 in main\n'
        f'  File "{SCRIPT}", line 412 in <module>\n'
        "\n"
        "Extension modules: numpy.core._multiarray_umath, numpy.core._multiarray_tests, numpy.linalg._umath_linalg, "
        "torch._C, torch._C._dynamo.autograd_compiler, torch._C._dynamo.eval_frame, torch._C._dynamo.guards, "
        "torch._C._dynamo.utils, torch._C._fft, torch._C._linalg, torch._C._nested, torch._C._nn, torch._C._sparse, "
        "torch._C._special, yaml._yaml, sentencepiece._sentencepiece (total: 16)\n"
    )


def die_by(sig):
    """Terminate with a real signal (no core file), as the crashed process would."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    if sig != signal.SIGKILL:
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    time.sleep(5)
    os._exit(128 + sig)


def loss_at(step, seed):
    rnd = random.Random(seed * 100003 + step)
    return 2.35 * math.exp(-step / 400.0) + 0.6 + rnd.uniform(-0.02, 0.02)


MARK = [None]


def mark_fatal():
    """Record when the fatal line is about to be written (the first time only)."""
    path, MARK[0] = MARK[0], None
    if path:
        with open(path, "w") as f:
            f.write(f"{time.time():.6f}\n")


def is_fixed(path):
    if not path:
        return False
    try:
        with open(path) as f:
            return "fixed" in f.read()
    except OSError:
        return False


def parse(argv):
    p = argparse.ArgumentParser(prog="jobsim.py", description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20, help="steps to run, 0 = forever")
    p.add_argument("--interval", type=float, default=0.1, help="seconds between steps")
    p.add_argument("--start-delay", type=float, default=0.0, help="silent seconds before the first line")
    p.add_argument("--log", help="write stdout and stderr to this file instead")
    p.add_argument("--log-delay", type=float, default=0.0, help="with --log: create the file only after S seconds")
    p.add_argument("--crash", choices=["fx", "oom", "import", "syntax", "nccl", "segfault", "sigkill", "silent", "exc",
                                       "illegal", "zl", "loopdeath"])
    p.add_argument("--crash-at", type=int, default=1, help="step at which the crash happens")
    p.add_argument("--exit-code", type=int, default=0, help="exit status of --crash silent")
    p.add_argument("--threads", type=int, default=0, help="drafter threads (drafter-0 ...) that print too")
    p.add_argument("--fixed-file", help="if this file contains 'fixed', do not crash")
    p.add_argument("--lr", default="3e-4")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ignore-term", action="store_true", help="ignore SIGTERM (needs SIGKILL to stop)")
    p.add_argument("--keep-stepping", type=float, default=0.0,
                   help="fx: seconds the main loop goes on printing steps after the drafters died (-1: for ever)")
    p.add_argument("--interleave", action="store_true", help="write lines in unlocked chunks: threads' output mixes mid-line")
    p.add_argument("--hang", choices=["deadlock", "syscall", "pause"],
                   help="at --hang-at: two threads deadlock on two locks (and the main loop waits for them), "
                        "the main thread blocks reading a pipe nobody writes, or it pauses --pause seconds and goes on")
    p.add_argument("--hang-at", type=int, default=10, help="step at which --hang happens")
    p.add_argument("--pause", type=float, default=5.0, help="--hang pause: seconds without output")
    p.add_argument("--jitter", type=float, default=0.0, help="each step takes --interval plus up to this many seconds more (irregular steps)")
    p.add_argument("--eval-every", type=int, default=0, help="a silent 'evaluation' of --eval-seconds every N steps (slow, not stalled)")
    p.add_argument("--eval-seconds", type=float, default=1.0)
    p.add_argument("--gpu-mem", type=int, default=0, help="hold a GPU context of this many MiB (the lab's nvidia-smi lists it)")
    p.add_argument("--gpu", type=int, default=0, help="the GPU index of --gpu-mem")
    p.add_argument("--gpu-procs", type=int, default=1, help="processes holding a context each (ranks): K-1 are forked")
    p.add_argument("--go-file", help="--crash, --hang and the last of --steps wait until this file exists ({pgid}: the job's process group)")
    p.add_argument("--mark-file", help="write the wall-clock time of the fatal event here (benchmarks: event → verdict latency)")
    return p.parse_args(argv)


GPU_FDS = []


def gpu_attach(mib, index):
    """Open the GPU's device nodes (where present) and hold a context of ``mib`` MiB on it."""
    for dev in (f"/dev/nvidia{index}", "/dev/nvidiactl", "/dev/nvidia-uvm"):
        try:
            GPU_FDS.append(os.open(dev, os.O_RDWR))
        except OSError:
            pass
    import fcntl
    import json

    ctx_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "state", "gpu-ctx")
    os.makedirs(ctx_dir, exist_ok=True)
    tmp = os.path.join(ctx_dir, f".new-{os.getpid()}-{random.randrange(1 << 30)}")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, json.dumps({"gpu": index, "used_memory": mib, "process_name": sys.executable}).encode())
    fcntl.flock(fd, fcntl.LOCK_SH)  # held while the process (any of its threads) lives
    os.rename(tmp, os.path.join(ctx_dir, "ctx-" + os.path.basename(tmp)[5:] + ".json"))
    GPU_FDS.append(fd)


def gpu_ranks(args):
    """Fork the extra ranks (each holds its own context and ends with the job), then attach."""
    parent = os.getpid()
    for _ in range(max(0, args.gpu_procs - 1)):
        if os.fork() == 0:
            gpu_attach(args.gpu_mem, args.gpu)
            while os.getppid() == parent:
                time.sleep(0.1)
            os._exit(0)
    gpu_attach(args.gpu_mem, args.gpu)


def open_log(args):
    if args.log_delay > 0:
        time.sleep(args.log_delay)
    fd = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def main(argv=None):
    args = parse(argv if argv is not None else sys.argv[1:])
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    INTERLEAVE[0] = args.interleave
    MARK[0] = args.mark_file
    if args.log:
        open_log(args)
    crash = None if is_fixed(args.fixed_file) else args.crash
    go = (args.go_file or "").replace("{pgid}", str(os.getpgrp()))  # held until the test creates it
    if crash == "syntax":
        emit(tb_syntax(), sys.stderr)
        return 1
    if crash == "import":
        emit(tb_import(), sys.stderr)
        return 1
    if args.start_delay > 0:
        time.sleep(args.start_delay)  # "loading the 27B model": no output at all
    if args.gpu_mem > 0:
        gpu_ranks(args)

    nthreads = args.threads or (1 if crash == "fx" else 0)
    fx_step = args.crash_at if crash == "fx" else None
    died = []
    step_now = [0]
    done = threading.Event()

    def drafter(i):
        name = threading.current_thread().name
        emit(f"{name}: compiling flex_attention")
        while not done.is_set():
            if fx_step is not None and step_now[0] >= fx_step:
                died.append(name)
                mark_fatal()
                emit(f"Exception in thread {name}:\n" + tb_fx(), sys.stderr)
                return
            time.sleep(min(args.interval, 0.05) or 0.01)

    threads = [threading.Thread(target=drafter, args=(i,), name=f"drafter-{i}", daemon=True)
               for i in range(nthreads)]
    for t in threads:
        t.start()

    step = 0
    died_at = None
    if fx_step == 0:  # the drafters die before the first step is printed
        for t in threads:
            t.join()
        died_at = time.monotonic()
    while args.steps == 0 or step < args.steps or (go and not os.path.exists(go)):
        step += 1
        if crash == "fx" and step >= fx_step and died_at is None:
            step_now[0] = step
            died_at = time.monotonic()
        if died_at is not None and args.keep_stepping >= 0 and time.monotonic() - died_at >= args.keep_stepping:
            for t in threads:
                t.join()
            return 1  # every drafter died: the trainer gives up without a word
        if crash is not None and crash != "fx" and step >= args.crash_at and not (go and not os.path.exists(go)):
            return do_crash(crash, step, args)
        if args.hang and step >= args.hang_at and not (go and not os.path.exists(go)):
            hang(args.hang, args)
            args.hang = None  # once (a pause returns)
        if args.eval_every and step % args.eval_every == 0:
            time.sleep(args.eval_seconds)  # a silent evaluation: slow, not stalled
        emit(f"step {step} loss {loss_at(step, args.seed):.4f} lr {args.lr}")
        step_now[0] = step
        time.sleep(args.interval + (random.random() * args.jitter if args.jitter else 0.0))
    done.set()
    emit(f"training finished: {step} steps")
    return 0


def hang(kind, args):
    """Stop making progress the ways real jobs do, without a traceback."""
    mark_fatal()
    if kind == "pause":
        time.sleep(args.pause)
        return
    if kind == "syscall":
        r, _w = os.pipe()
        os.read(r, 1)  # nobody ever writes: blocked in the kernel (pipe_read), state S, for ever
        return
    a, b = threading.Lock(), threading.Lock()
    ready = threading.Barrier(2)

    def first():
        with a:
            ready.wait()
            with b:  # the compile lock, taken second here …
                pass

    def second():
        with b:
            ready.wait()
            with a:  # … and first there: a lock-order deadlock
                pass

    ts = [threading.Thread(target=first, name="drafter-lock-a"), threading.Thread(target=second, name="trainer-lock-b")]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def do_crash(kind, step, args):
    mark_fatal()
    if kind == "oom":
        emit(tb_oom(step), sys.stderr)
        return 1
    if kind == "illegal":
        emit(tb_illegal(step), sys.stderr)
        return 1
    if kind == "nccl":
        emit(nccl_text(step), sys.stderr)
        die_by(signal.SIGABRT)
    if kind == "segfault":
        emit(segv_text(), sys.stderr)
        die_by(signal.SIGSEGV)
    if kind == "sigkill":
        die_by(signal.SIGKILL)
    if kind == "silent":
        return args.exit_code
    if kind == "exc":
        emit(tb_main(step, frame(SCRIPT, 340, "train_step", "raise RuntimeError(f\"loss is NaN at step {step}\")", "all"),
                     f"RuntimeError: loss is NaN at step {step}\n"), sys.stderr)
        return 1
    if kind == "zl":
        import ctypes

        t = threading.Thread(target=lambda: time.sleep(10**6), name="stuck-in-driver", daemon=True)
        t.start()
        sys.stdout.flush()
        sys.stderr.flush()
        libc = ctypes.CDLL(None)
        libc.pthread_exit(None)  # the leader becomes a zombie while its thread lives: ps shows "Zl"
    if kind == "loopdeath":  # a real uncaught exception: Python then waits for these non-daemon threads for ever
        import ctypes  # each names itself for /proc/PID/task/TID/comm (PR_SET_NAME), as torch's threads do
        for i in range(3):
            threading.Thread(target=lambda n: (ctypes.CDLL(None).prctl(15, n.encode(), 0, 0, 0), threading.Event().wait()),
                             args=(f"drafter-{i}",), name=f"drafter-{i}").start()
        raise FloatingPointError(f"loss is nan at step {step}: the loss diverged")
    raise SystemExit(f"unknown crash kind {kind}")


if __name__ == "__main__":
    sys.exit(main())
