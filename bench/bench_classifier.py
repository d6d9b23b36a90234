"""Benchmark: the log classifier against a naive baseline, measured in the same run.

Generates a realistic training log (step lines, periodic eval and checkpoint lines, warnings,
a tqdm bar, caught tracebacks, an ``Exception ignored`` block, a chained exception, and the seed's
FX/dynamo crash in three drafter threads at the end), then times:

* ``Classifier.feed`` on every line (the prefilter, tracebacks, first/final error);
* the naive baseline: every built-in signature's regex (and the traceback header) searched on
  every line, which is what a classifier without a prefilter does;
* both again on plain step lines only (the common case the prefilter exists for).

Usage: ``python bench/bench_classifier.py [--lines N] [--repeat R] [--seed S]``.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.probes.signatures import BUILTIN, Classifier  # noqa: E402

TB_HEADER = re.compile(r"Traceback \(most recent call last\):")

FX_TRACE = """Exception in thread drafter-{i}:
Traceback (most recent call last):
  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner
    self.run()
  File "/usr/lib/python3.11/threading.py", line 982, in run
    self._target(*self._args, **self._kwargs)
  File "/workspace/train_tl.py", line 412, in drafter_worker
    logits = self.drafter(hidden, block_mask=self.block_mask)
  File "/usr/local/lib/python3.11/dist-packages/torch/_dynamo/eval_frame.py", line 554, in _fn
    raise RuntimeError(
RuntimeError: Detected that you are using FX to symbolically trace
a dynamo-optimized function. This is not supported at the moment.""".splitlines()

CAUGHT = """[{ts}] ERROR data: shard failed, retrying
Traceback (most recent call last):
  File "/workspace/data.py", line 77, in load_shard
    return self.cache[key]
KeyError: 'shard-{n:05d}'""".splitlines()

IGNORED = """Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f3a2c1e5e40>
Traceback (most recent call last):
  File "/usr/local/lib/python3.11/dist-packages/torch/utils/data/dataloader.py", line 1479, in __del__
    self._shutdown_workers()
AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_shutdown'""".splitlines()

WARNINGS = [
    "/usr/local/lib/python3.11/dist-packages/torch/_inductor/compile_fx.py:167: UserWarning: TensorFloat32 tensor "
    "cores for float32 matrix multiplication available but not enabled.",
    "  warnings.warn(",
    "W0114 01:23:45.123000 140210 torch/_dynamo/convert_frame.py:844] torch._dynamo hit config.cache_size_limit (8)",
    "/workspace/train.py:201: FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated.",
]


def step_line(i: int, rng: random.Random) -> str:
    return (
        f"[2025-01-14 01:{(i // 60) % 60:02d}:{i % 60:02d}] step {i}/1000000 loss={2.0 + rng.random():.4f} "
        f"lr={3e-4 * (1 - i / 1e6):.3e} grad_norm={rng.random() * 2:.3f} tok/s={40000 + rng.randrange(9000)} "
        f"mem={70 + rng.random() * 8:.1f}GiB"
    )


def generate(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out: list[str] = []
    tail = [line.format(i=t) for t in range(3) for line in FX_TRACE]
    i = 0
    while len(out) < n - len(tail):
        i += 1
        r = rng.random()
        if r < 0.93:
            out.append(step_line(i, rng))
        elif r < 0.96:
            out.append(f"[2025-01-14 01:00:00] INFO eval: step {i} val_loss={2.1 + rng.random():.4f} acc={rng.random():.3f}")
        elif r < 0.985:
            out.append(rng.choice(WARNINGS))
        elif r < 0.995:
            out.append(f" {i % 100:3d}%|{'█' * (i % 10)}{' ' * (10 - i % 10)}| {i % 100}/100 [00:0{i % 10}<00:10, 9.5it/s]")
        else:
            out.append(f"[2025-01-14 01:00:00] INFO checkpoint: saved /ckpt/step_{i}.pt ({rng.randrange(50, 60)} GiB)")
        if i % 200_000 == 0:
            out.extend(line.format(ts="2025-01-14 01:00:00", n=i) for line in CAUGHT)
        if i % 333_333 == 0:
            out.extend(IGNORED)
    del out[max(0, n - len(tail)) :]
    return out + tail[: n - len(out)]


def naive(lines: list[str]) -> int:
    regexes = [s.regex.search for s in BUILTIN] + [TB_HEADER.search]
    hits = 0
    for line in lines:
        for search in regexes:
            if search(line) is not None:
                hits += 1
    return hits


def fast(lines: list[str]) -> Classifier:
    c = Classifier()
    feed = c.feed
    for line in lines:
        feed(line)
    c.flush()
    return c


def timed(fn, lines: list[str], repeat: int) -> tuple[float, object]:
    best = float("inf")
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn(lines)
        best = min(best, time.perf_counter() - t)
    return best, result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="best of R runs for each measurement")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    measure(args.lines, args.repeat, args.seed)
    return 0


def measure(n_lines: int, repeat: int, seed: int = 1) -> list[tuple[str, float, float]]:
    """Prints the figures; answers (input, classifier lines/s, naive lines/s) for the full log and step lines."""
    t = time.perf_counter()
    lines = generate(n_lines, seed)
    steps = [line for line in lines if " step " in line and "loss=" in line]
    print(f"generated {len(lines):,} lines ({len(steps):,} step lines) in {time.perf_counter() - t:.2f}s")
    print(f"python {sys.version.split()[0]}, {len(BUILTIN)} built-in signatures")

    rows = []
    for name, data in (("full log", lines), ("step lines", steps)):
        t_fast, c = timed(fast, data, repeat)
        t_naive, _ = timed(naive, data, max(1, repeat - 2))
        rows.append((name, len(data) / t_fast, len(data) / t_naive))
        if name == "full log":
            assert isinstance(c, Classifier)
            fe, le = c.first_error, c.final_error
            print(f"  matches: {dict(c.counts)}")
            print(f"  first error: line {fe.line_no if fe else None} {fe.label if fe else ''!r}")
            print(f"  final error: line {le.line_no if le else None} thread={le.thread if le else None} "
                  f"traceback={len(le.traceback) if le else 0} lines")
    print()
    print(f"{'input':<12} {'classifier lines/s':>20} {'naive lines/s':>15} {'ratio':>7}")
    for name, f, n in rows:
        print(f"{name:<12} {f:>20,.0f} {n:>15,.0f} {f / n:>6.1f}x")
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
