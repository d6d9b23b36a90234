"""The built-in signature table: data only.

Each entry says what a log line means (layer, label, advice); :data:`TRACEBACK` and
:data:`INCOMPLETE_TRACEBACK` label assembled tracebacks that no specific signature matched.
Order does not matter; ``priority`` breaks ties.  Every ``kind`` is unique: it is the id that
config uses to ignore a signature.
"""

from __future__ import annotations

from ..layers import Layer, Severity
from .sig_model import Signature

__all__ = ["BUILTIN", "TRACEBACK", "INCOMPLETE_TRACEBACK", "SHELL_CRASHES", "EAGER_FALLBACK"]

_FX = (
    "Compile once before the threads start (warm the compiled function up under a lock in the main "
    "thread), or keep torch.compile out of worker threads; clear the inductor cache between attempts."
)

#: The shells' own lines for a child killed by a signal (dash, bash and busybox print the same
#: words; ``Killed`` has its own signature, ``killed``, since the OOM killer is its usual sender).
SHELL_CRASHES: tuple[tuple[str, str], ...] = (
    ("Segmentation fault", "SIGSEGV"),
    ("Aborted", "SIGABRT"),
    ("Bus error", "SIGBUS"),
    ("Floating point exception", "SIGFPE"),
    ("Illegal instruction", "SIGILL"),
)

#: The built-in table.  Order does not matter; ``priority`` breaks ties.
BUILTIN: tuple[Signature, ...] = (
    Signature(
        # two fragments of the one message that do not overlap: threads that write to stderr
        # unlocked can split the line anywhere (another thread's text mid-line), and one split
        # leaves one of them whole
        r"using FX to symbolically|trace a dynamo-optimized function",
        Layer.APP,
        "FX traced a dynamo-optimized function (torch.compile race between threads?)",
        _FX,
        kind="fx-dynamo-race",
        priority=90,
        keywords=("using FX to symbolically", "trace a dynamo-optimized function"),
    ),
    Signature(
        r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED",
        Layer.GPU,
        "CUDA out of memory",
        "Lower the batch size or sequence length, or free the GPU: check nvidia-smi for memory held by "
        "other or dead processes; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True reduces fragmentation.",
        kind="cuda-oom",
        priority=70,
        keywords=("OutOfMemoryError", "out of memory", "ALLOC_FAILED"),
    ),
    Signature(
        r"an illegal memory access was encountered|CUDA error: misaligned address|illegal instruction was encountered",
        Layer.GPU,
        "CUDA illegal memory access",
        "The CUDA context is unusable: restart the process. Rerun with CUDA_LAUNCH_BLOCKING=1 to find the "
        "kernel; check the host's kernel messages for Xid 13/31/43.",
        kind="cuda-illegal-access",
        priority=65,
        keywords=("illegal memory access", "misaligned address", "illegal instruction"),
    ),
    Signature(
        r"device-side assert triggered|Assertion `.*` failed",
        Layer.APP,
        "CUDA device-side assert (an index out of range in the code?)",
        "Usually an out-of-range index (embedding, labels, gather); rerun with CUDA_LAUNCH_BLOCKING=1 "
        "(or on CPU) to see the failing line.",
        kind="cuda-assert",
        priority=66,
        keywords=("device-side assert", "` failed"),
    ),
    Signature(
        r"No CUDA GPUs are available|no CUDA-capable device is detected|Found no NVIDIA driver on your system"
        r"|CUDA driver initialization failed|CUDA_ERROR_NO_DEVICE|cudaErrorNoDevice",
        Layer.GPU,
        "no GPU visible to CUDA",
        "The container sees no GPU: check /dev/nvidia* in the container, CUDA_VISIBLE_DEVICES, and the "
        "host's nvidia-smi.",
        kind="cuda-no-device",
        priority=64,
        keywords=("No CUDA GPUs", "CUDA-capable device", "no NVIDIA driver", "driver initialization", "NO_DEVICE",
                  "NoDevice"),
    ),
    Signature(
        r"Driver/library version mismatch|CUDA driver version is insufficient",
        Layer.GPU,
        "NVIDIA driver/library version mismatch",
        "The kernel module and the CUDA/NVML userspace differ: reboot the host after a driver upgrade, or "
        "match the container's libraries to the host's driver.",
        kind="driver-mismatch",
        priority=64,
        keywords=("version mismatch", "version is insufficient"),
    ),
    Signature(
        r"CUDA error: |CUDA driver error|cudaError\w+|CUDA_ERROR_\w+",
        Layer.GPU,
        "CUDA error",
        "Check the host's kernel messages for an Xid and nvidia-smi's state; rerun with "
        "CUDA_LAUNCH_BLOCKING=1 to locate it.",
        kind="cuda-error",
        priority=40,
        keywords=("CUDA error", "CUDA driver error", "cudaError", "CUDA_ERROR_"),
    ),
    Signature(
        r"Watchdog caught collective operation timeout",
        Layer.APP,
        "NCCL watchdog: a collective timed out",
        "One rank stalled or died: find the first error in the other ranks' logs; NCCL_DEBUG=INFO; check "
        "that every rank reaches the same collectives.",
        kind="nccl-timeout",
        priority=60,
        keywords=("Watchdog caught",),
    ),
    Signature(
        r"\bNCCL error\b|nccl(?:Internal|System|UnhandledCuda|InvalidUsage|InvalidArgument|Remote)Error"
        r"|DistBackendError|NCCL communicator was aborted",
        Layer.APP,
        "NCCL error",
        "Read the first rank's error; NCCL_DEBUG=INFO shows the failing transport (IB/socket/P2P).",
        kind="nccl-error",
        priority=55,
        keywords=("NCCL error", "ncclInternalError", "ncclSystemError", "ncclUnhandledCudaError", "ncclInvalidUsage",
                  "ncclInvalidArgument", "ncclRemoteError", "DistBackendError", "NCCL communicator"),
    ),
    Signature(
        r"BackendCompilerFailed",
        Layer.APP,
        "torch.compile backend failed",
        "The message after 'raised:' is the real error; TORCH_LOGS=+dynamo TORCHDYNAMO_VERBOSE=1 show "
        "more; clear the inductor cache (/tmp/torchinductor_$USER) between attempts.",
        kind="dynamo-backend-failed",
        priority=60,
        keywords=("BackendCompilerFailed",),
    ),
    Signature(
        r"InductorError|torch\._inductor\.exc\.\w+|LoweringException",
        Layer.APP,
        "inductor compile error",
        "Read the inductor error; clear /tmp/torchinductor_$USER; try mode='default' or the eager backend "
        "to confirm.",
        kind="inductor-error",
        priority=58,
        keywords=("InductorError", "_inductor.exc", "LoweringException"),
    ),
    Signature(
        r"torch\._dynamo\.exc\.(?!BackendCompilerFailed)(\w+)",
        Layer.APP,
        "torch.compile (dynamo) error: {1}",
        "TORCH_LOGS=+dynamo shows where tracing failed; torch._dynamo.config.suppress_errors=True falls "
        "back to eager.",
        kind="dynamo-error",
        priority=52,
        keywords=("_dynamo.exc",),
    ),
    Signature(
        r"ModuleNotFoundError: No module named '?([^'\s]+)'?",
        Layer.APP,
        "missing module {1}",
        "Install it in the environment the job runs with (check the interpreter path and venv), or fix "
        "PYTHONPATH.",
        kind="module-not-found",
        priority=62,
        keywords=("ModuleNotFoundError",),
    ),
    Signature(
        r"ImportError: ",
        Layer.APP,
        "import error",
        "A module or name failed to import: version mismatch between packages, or a circular import.",
        kind="import-error",
        priority=61,
        keywords=("ImportError",),
    ),
    Signature(
        r"^\W*(?:\w+: )?(SyntaxError|IndentationError|TabError): ",
        Layer.APP,
        "{1} in the deployed code",
        "The deployed code does not parse: run `python -m py_compile` before launching.",
        kind="syntax-error",
        priority=63,
        keywords=("SyntaxError", "IndentationError", "TabError"),
    ),
    Signature(
        r"No space left on device|Errno 28\b|Disk quota exceeded",
        Layer.CONTAINER,
        "disk full",
        "Free space in the container (checkpoints, /tmp, the inductor and pip caches): `df -h`.",
        kind="disk-full",
        priority=68,
        keywords=("No space left", "Errno 28", "quota exceeded"),
    ),
    Signature(
        # numpy names the array the code asked for (``Unable to allocate 7.28 TiB for an array with
        # shape (1000000, 1000000)``): most often a shape computed wrong, the code's, not the container's
        r"_ArrayMemoryError: Unable to allocate ([\d.]+ ?[KMGTPE]?i?B) for an array with shape (\([^)]*\))",
        Layer.APP,
        "the code asked numpy for {1} (an array of shape {2})",
        "numpy could not allocate the array the code sized: check the shape it computes (a batch or "
        "sequence dimension multiplied in twice, a transposed size); if the size is meant, the container's "
        "memory limit or the host's RAM is too small for it.",
        kind="numpy-array-memory",
        priority=59,
        keywords=("_ArrayMemoryError",),
    ),
    Signature(
        # Python's allocator failed (ENOMEM under a cgroup's memory.max or `ulimit -v`); numpy's
        # ``_ArrayMemoryError`` names its size and shape: the signature above; CUDA's OutOfMemoryError is the GPU's
        r"(?:^|: )(?:[\w.]+\.)?_?(?:Array)?MemoryError(?::|\s*$)",
        Layer.CONTAINER,
        "out of memory (MemoryError)",
        "Python could not allocate memory: the container's memory limit (memory.max), an address-space "
        "limit (ulimit -v) or the host's RAM ran out; an allocation sized by the code (a huge array) raises "
        "it too: the traceback's last frame shows which.",
        kind="memory-error",
        priority=58,
        keywords=("MemoryError",),
    ),
    Signature(
        r"can't start new thread|fork: Resource temporarily unavailable|Cannot allocate memory|"
        r"Too many open files|Errno 24\b",
        Layer.CONTAINER,
        "the container ran out of processes, memory or file descriptors",
        "Check the container's limits (pids.max, memory, ulimit -n) and leftover processes (zombies).",
        kind="resource-limit",
        priority=57,
        keywords=("start new thread", "temporarily unavailable", "allocate memory", "open files", "Errno 24"),
    ),
    Signature(
        r"Fatal Python error: (Segmentation fault|Aborted|Bus error|Floating point exception|\w[^:]*)"
        r"|Segmentation fault \(core dumped\)|\bSIGSEGV\b",
        Layer.APP,
        "the job crashed in native code (segfault)",
        "A crash inside a C/CUDA extension: faulthandler's stack above shows where; check the host's "
        "kernel messages (segfault line, Xid); mismatched torch/CUDA/extension builds are a common cause.",
        kind="segfault",
        priority=67,
        keywords=("Fatal Python error", "Segmentation fault", "SIGSEGV"),
    ),
    Signature(
        r"terminate called after throwing an instance of '([^']+)'",
        Layer.APP,
        "C++ exception escaped: {1}",
        "The 'what():' line that follows carries the message; often a CUDA or NCCL error inside an "
        "extension.",
        kind="cpp-terminate",
        priority=59,
        keywords=("terminate called",),
    ),
    Signature(
        r"^\s*Killed\s*$|\b\d+ Killed\s+\S",
        Layer.PROCESS,
        "killed by SIGKILL (the OOM killer?)",
        "Read the host's kernel messages for an OOM kill of this process; raise the container's memory "
        "limit or lower RAM use (dataloader workers, pinned memory, model loading).",
        kind="killed",
        priority=56,
        keywords=("Killed",),
    ),
    *(
        Signature(
            # the waiting shell's own line (dash and busybox: the name alone; bash: ``NAME: line N:
            # PID Segmentation fault      (core dumped) CMD``): the job was killed by that signal
            rf"^\s*({name})(?: \(core dumped\))?\s*$|^\S[^:]*: (?:line \d+: )?\s*\d+ +({name})\b",
            Layer.PROCESS,
            f"the shell says {name} ({sig})",
            "A native crash (a C/CUDA extension, a bad build) or a signal from outside: rerun with "
            "PYTHONFAULTHANDLER=1 to see the Python stack at the crash; check the host's kernel messages.",
            kind=f"shell-{sig.lower()}",
            priority=69,
            keywords=(name,),
        )
        for name, sig in SHELL_CRASHES
    ),
    Signature(
        # torch.save on a full disk: PyTorch's writer never says ENOSPC
        r"basic_ios::clear: iostream error|enforce fail at inline_container\.cc.*unexpected pos"
        r"|PytorchStreamWriter failed writing file",
        Layer.CONTAINER,
        "writing a checkpoint failed (disk full?)",
        "torch.save could not write: free space where the checkpoint goes (`df -h`, `df -i`).",
        kind="torch-write-failed",
        priority=68,
        keywords=("basic_ios::clear", "inline_container.cc", "PytorchStreamWriter failed"),
    ),
    Signature(
        # torch._dynamo with suppress_errors logs this (at WARNING, with a traceback) and runs the
        # function eagerly: a finding about speed, not a failure
        r"WON'T CONVERT (\S+) (.+?) line (\d+)",
        Layer.APP,
        "running eagerly: compile failed for `{1}` ({2}:{3})",
        "torch.compile fell back to eager for this function (suppress_errors): the traceback after it "
        "says why; the run goes on, slower.",
        kind="dynamo-eager-fallback",
        severity=Severity.WARNING,
        priority=61,
        keywords=("WON'T CONVERT",),
    ),
    Signature(
        # PyTorch's main process on a worker the kernel killed: the container's memory, not the code
        r"DataLoader worker \(pid\(?s?\)? [\d, ]+\) is killed by signal: Killed",
        Layer.CONTAINER,
        "a DataLoader worker was killed by SIGKILL (the OOM killer?)",
        "Read the host's kernel messages for an OOM kill; raise the container's memory limit, or use fewer "
        "DataLoader workers (num_workers) or a smaller prefetch_factor.",
        kind="dataloader-worker-killed",
        priority=72,
        keywords=("killed by signal: Killed",),
    ),
    Signature(
        # subprocess.run(check=True) of a child SIGKILLed (an evaluation, a data preparation step):
        # the trainer's traceback ends with the child's signal, as the OOM killer sends it
        r"CalledProcessError: Command .* died with <Signals\.SIGKILL: 9>",
        Layer.CONTAINER,
        "a subprocess of the job was killed by SIGKILL (the OOM killer?)",
        "Read the host's kernel messages for an OOM kill; raise the container's memory limit, or give the "
        "subprocess less to hold (a smaller evaluation batch).",
        kind="subprocess-killed",
        priority=72,
        keywords=("died with <Signals.SIGKILL",),
    ),
    Signature(
        # a worker's SIGBUS: the batches it hands over live in /dev/shm, which was full
        r"Unexpected bus error encountered in worker|DataLoader worker \(pid\(?s?\)? [\d, ]+\) is killed by signal: Bus error",
        Layer.CONTAINER,
        "a DataLoader worker died of SIGBUS: /dev/shm too small?",
        "Raise the container's shared memory (docker run --shm-size=16g, a larger /dev/shm mount), or use "
        "fewer DataLoader workers.",
        kind="dataloader-worker-shm",
        priority=72,
        keywords=("Unexpected bus error", "killed by signal: Bus error"),
    ),
    Signature(
        # argparse's last line before its exit 2 (the usage line above it), and click's: the job's
        # command line names an option its code does not take (or misses one it requires)
        r"^\S+: error: ((?:unrecognized arguments|the following arguments are required|argument \S+|ambiguous option"
        r"|one of the arguments .+ is required)\b.*)"
        r"|^Error: ((?:No such option|Missing (?:option|argument)|Invalid value for|Got unexpected extra argument)\b.*)",
        Layer.APP,
        "the command line was refused: {1}{2}",
        "The arguments in [job] command do not match the options the deployed code takes (its usage line is "
        "just above in the log): fix the command, or deploy the code that has the option.",
        kind="usage-error",
        priority=50,
        keywords=(": error: ", "Error: No such option", "Error: Missing ", "Error: Invalid value for", "Error: Got unexpected"),
    ),
    Signature(
        # input() (a prompt: a login, a trust_remote_code question) on the job's stdin, which
        # cockpit gives /dev/null: the code waited for an answer no one can type
        r"^\W*(?:\w+: )?EOFError: EOF when reading a line",
        Layer.APP,
        "the job asked for input (EOFError: EOF when reading a line): its stdin had none (cockpit starts it on /dev/null)",
        "Something in the job prompts for an answer (input(), a login, a confirmation): give it in the command "
        "or the environment (a flag such as --yes, a token variable) so it never asks.",
        kind="stdin-eof",
        priority=50,
        keywords=("EOF when reading a line",),
    ),
    Signature(
        r"ChildFailedError",
        Layer.APP,
        "a torchrun worker failed",
        "torchrun's summary: the worker's own first error (earlier in the log, or its error file) is the "
        "cause.",
        kind="torchrun-child-failed",
        severity=Severity.WARNING,
        priority=10,
        keywords=("ChildFailedError",),
    ),
)

#: The generic traceback signature: its label is the final exception line.
TRACEBACK = Signature(
    r"Traceback \(most recent call last\)",
    Layer.APP,
    "Python exception",
    "Read the traceback: the last frame in your code is usually where to look.",
    kind="python-traceback",
    priority=0,
)

#: A traceback whose exception line never came (output cut, or the process died while printing).
INCOMPLETE_TRACEBACK = Signature(
    r"Traceback \(most recent call last\)",
    Layer.APP,
    "traceback without an exception line (output cut?)",
    "The process may have died while printing; check the process state and the host's kernel messages.",
    kind="python-traceback-incomplete",
    severity=Severity.WARNING,
    priority=0,
)

#: The dynamo eager-fallback signature (a traceback right after its line is part of the finding).
EAGER_FALLBACK = next(s for s in BUILTIN if s.kind == "dynamo-eager-fallback")
