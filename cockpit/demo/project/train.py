"""The cockpit demo's training job: a target model, three drafter threads, a step loop.

Run it as cockpit does: ``python train.py`` in this directory, stdout and stderr into one log.
It prints ``step N loss X lr Y`` every 0.2 s until stopped (SIGTERM/SIGINT).  Each step runs the
target model (``model.py``) on a batch that grows during the warm-up (8, then 16, then 32) and
``train_step``; both are compiled (their compiles go to ``$TORCH_TRACE``: the first new batch size
recompiles ``forward``, and ``train_step`` breaks its graph at ``loss.item()``).  Training starts
while the drafters still compile (drafting joins in once they are ready), so when drafter threads
die with the FX error the main loop *keeps printing steps* for a few seconds, as the seed's
pipeline did, before it notices and exits 1.  A log with progress lines and dead threads is not a
healthy job: cockpit must say ``failed (app)`` however those lines interleave.

Environment:
  TORCHINDUCTOR_CACHE_DIR   where compiled graphs are cached (as with torch)
  TORCH_TRACE               a directory: every compile is written there in torch's structured
                            trace format (as with torch), for cockpit's compile view
  COCKPIT_DEMO_GPU_STATE    JSON file the demo's simulated nvidia-smi reads (load, memory, pid)
  COCKPIT_DEMO_MAX_SECONDS  stop on its own after this long (default 1800), so a forgotten
                            demo job does not run for ever
  COCKPIT_DEMO_CRASH_FILE   when this file appears (``cockpit demo crash-later``), the job dies
                            with a RuntimeError after the number of seconds it holds: a job that
                            passed and died later, to see a fate change in the history
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import sys
import threading
import time

import minitorch
from console import exit_now, install_thread_excepthook, say
from drafter import Drafter
from minitorch._inductor import codecache
from model import Loss, TargetModel

DRAFTER_LAYERS = (2, 3, 4)
LOAD_SHARDS = 4
SHARD_S = 0.25
STEP_S = 0.2
BASE_LR = 3e-4
#: how long the main loop goes on after a drafter died before it gives up (the seed's "few seconds")
DEAD_GRACE_S = 2.0
#: the batch size grows during the warm-up: (first step, size)
BATCH_WARMUP = ((1, 8), (10, 16), (25, 32))


def batch_size(step: int) -> int:
    return [size for first, size in BATCH_WARMUP if step >= first or first == 1][-1]


def train_step(loss: Loss) -> float:
    """Backward and the optimizer's update after the forward pass, then the loss as a Python float
    for the log line (dynamo breaks the graph at the ``.item()``)."""
    loss.backward()
    return loss.item()


class GpuState:
    """What the simulated GPU shows while this job runs (the demo's nvidia-smi reads the file)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.start_time = _start_time()

    def write(self, phase: str, utilization: int, memory_mib: int) -> None:
        if not self.path:
            return
        state = {
            "pid": os.getpid(), "start_time": self.start_time, "process_name": sys.executable,
            "phase": phase, "utilization_gpu": utilization, "memory_used_mib": memory_mib, "updated": time.time(),
        }
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            with open(tmp, "w") as fh:
                json.dump(state, fh)
            os.replace(tmp, self.path)
        except OSError:
            pass  # the simulated GPU is decoration; never let it stop training

    def clear(self) -> None:
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def _start_time() -> int | None:
    try:
        with open("/proc/self/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def main() -> int:
    t0 = time.monotonic()
    max_s = float(os.environ.get("COCKPIT_DEMO_MAX_SECONDS") or 1800)
    gpu = GpuState(os.environ.get("COCKPIT_DEMO_GPU_STATE"))
    stop = threading.Event()
    stop_reason: list[str] = []

    def on_signal(signum: int, _frame: object) -> None:
        stop_reason.append(signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    say(f"[train] cockpit demo training job: pid {os.getpid()}, python {sys.version.split()[0]}, minitorch {minitorch.__version__}")
    cached = codecache.cached_entries()
    say(f"[train] inductor cache {codecache.cache_dir()}: "
        + (f"{cached} compiled graphs from an earlier run" if cached else "empty (cold start)"))

    say("[train] loading model… (target 1.3B, 3 drafters)")
    for shard in range(1, LOAD_SHARDS + 1):
        gpu.write("loading", 4, 1024 + shard * 12000)
        if stop.wait(SHARD_S):
            return stopped(gpu, stop_reason, 0)
        say(f"[train] loaded shard {shard}/{LOAD_SHARDS}")

    dead: list[str] = []
    install_thread_excepthook(lambda t: dead.append(t.name if t is not None else "?"))
    start, go = threading.Barrier(len(DRAFTER_LAYERS)), threading.Event()
    drafters = [Drafter(i, n, start, go) for i, n in enumerate(DRAFTER_LAYERS)]
    threads = [threading.Thread(target=d.run, name=d.name, daemon=True) for d in drafters]
    gpu.write("compiling", 38, 52000)
    for t in threads:
        t.start()

    model = minitorch.record_compiles(TargetModel().forward)
    step_fn = minitorch.record_compiles(train_step)
    say("[train] training starts; drafting joins in as the drafters finish compiling")
    rng = random.Random(os.getpid())  # each launch its own noise: attempts overlaid in the metrics pane stay apart
    step = 0
    next_at = time.monotonic()
    dead_seen_at: float | None = None
    crash = CrashLater(os.environ.get("COCKPIT_DEMO_CRASH_FILE"))
    while True:
        next_at += STEP_S
        if stop.wait(max(0.0, next_at - time.monotonic())):
            break
        if all(d.compiled.is_set() for d in drafters) and not go.is_set():
            go.set()
            say(f"[train] {len(drafters)} drafters compiled; drafting")
        if dead_seen_at is None and (dead or not all(t.is_alive() for t in threads)):
            dead_seen_at = time.monotonic()
        if dead_seen_at is not None and time.monotonic() - dead_seen_at >= DEAD_GRACE_S:
            give_up(gpu, drafters, threads, dead)
        crash.check(step)
        step += 1
        size = batch_size(step)
        if size != batch_size(step - 1):
            say(f"[train] warm-up: batch size {size}")
        noise = step_fn(model([rng.uniform(-0.02, 0.02) for _ in range(size)]))
        loss = 0.42 + 2.1 * math.exp(-step / 90) + noise
        lr = BASE_LR * min(1.0, step / 25)
        drafted = sum(d.tokens for d in drafters)
        say(f"step {step} loss {loss:.4f} lr {lr:.2e} drafted {drafted}")
        gpu.write("training", 95, 62208)
        if time.monotonic() - t0 > max_s:
            say(f"[train] demo time limit reached ({max_s:g}s, COCKPIT_DEMO_MAX_SECONDS): stopping")
            break
    return stopped(gpu, stop_reason, step)


class CrashLater:
    """``cockpit demo crash-later`` / ``hang``: the file holds ``crash|hang SECONDS``; that long after
    it appears the job dies with a RuntimeError, or deadlocks (two locks taken in opposite order)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.due: float | None = None
        self.kind = "crash"
        self.born = time.time()  # a request written before this job started was for another one

    def check(self, step: int) -> None:
        if not self.path:
            return
        if self.due is None:
            try:
                if os.stat(self.path).st_mtime < self.born - 1:  # left by a request no running job took
                    os.unlink(self.path)
                    return
                with open(self.path) as fh:
                    words = fh.read().split()
                kind, delay = (words[0], float(words[1])) if len(words) > 1 else ("crash", float(words[0]) if words else 0.0)
            except (OSError, ValueError, IndexError):
                return
            os.unlink(self.path)
            self.kind, self.due = kind, time.monotonic() + delay
            say(f"[train] (demo) a {kind} is scheduled in {delay:g}s")
        if time.monotonic() >= self.due:
            self.due = None
            if self.kind == "hang":
                deadlock()
            raise RuntimeError(f"loss is NaN at step {step}: gradients exploded (demo crash-later)")


def deadlock() -> None:
    """The main loop and a checkpoint thread take the same two locks in opposite order."""
    compile_lock, ckpt_lock = threading.Lock(), threading.Lock()
    both = threading.Barrier(2)

    def checkpoint() -> None:
        with ckpt_lock:
            both.wait()
            with compile_lock:
                pass

    threading.Thread(target=checkpoint, name="checkpoint-writer", daemon=True).start()
    with compile_lock:
        both.wait()
        with ckpt_lock:  # never: the checkpoint writer holds it and waits for ours
            pass


def give_up(gpu: GpuState, drafters: list[Drafter], threads: list[threading.Thread], dead: list[str]) -> None:
    # let the other drafters finish compiling or die too, so every traceback is printed whole
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and not all(d.compiled.is_set() or not t.is_alive() for d, t in zip(drafters, threads)):
        time.sleep(0.02)
    names = dead or [t.name for t in threads if not t.is_alive()]
    gpu.clear()
    say(f"[train] {', '.join(names)} died; stopping the run (exit 1)")
    exit_now(1)


def stopped(gpu: GpuState, reason: list[str], step: int) -> int:
    say(f"[train] {reason[0] if reason else 'stop'}: stopping at step {step}")
    gpu.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
