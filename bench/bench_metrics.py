"""Benchmark: what reading metrics from the log costs per line, against the classifier in the same run.

Generates a training log where most lines hold no metric (compile and NCCL chatter, warnings, data
loading) and some do, in the forms cockpit reads (``step N loss X …``, HF Trainer dicts, tqdm and
Lightning bars), then times per line:

* ``MetricParser.parse``: the keyword prefilter and, for the lines that pass it, the parse;
* the baseline: ``Classifier.feed`` (the failure classifier every log line already goes through);
* each form alone (metric lines only: the worst case);
* the whole path the job reader runs per line (``LogScan.feed``: sanitise, progress, classifier),
  with and without the metrics recorder (parse, series, one JSON record per metric line, one
  write per read of the log), so the difference is what metrics add to following a job;
* the same for the log ``bench/bench_log_pane.py``'s job writes (every line a metric line, 10,000 a
  second), and how long one read of ``--read`` such lines (what a reader finds after half a second)
  keeps the event loop from anything else: the longest stretch between two turns of the loop
  (``LogScan.feed_async``, judged in slices) against the whole read at once (``LogScan.feed``).

Usage: ``python bench/bench_metrics.py [--lines N] [--metric-share F] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.actions.jobstate import LogScan  # noqa: E402
from cockpit.core.actions.nonfinite import NonFiniteWatch  # noqa: E402
from cockpit.core.metrics import MetricParser, MetricsStore  # noqa: E402
from cockpit.core.probes.signatures import Classifier  # noqa: E402

CHATTER = [
    "[2025-01-14 01:02:03,456] INFO [rank{r}] compiling graph {n} for module drafter.layers.{k} with mode=max-autotune",
    "NCCL INFO Channel {k:02d}/0 : {r}[{r}] -> {n}[{n}] via P2P/IPC/read",
    "/usr/local/lib/python3.11/dist-packages/torch/_inductor/compile_fx.py:167: UserWarning: TensorFloat32 tensor cores available",
    "[data] shard {n:05d} loaded: 1024 samples in 0.{k}s",
    "W0114 01:23:45.123000 140210 torch/_dynamo/convert_frame.py:844] torch._dynamo hit config.cache_size_limit (8)",
    "[ckpt] wrote /workspace/ckpt/step-{n}.pt ({k}.2 GiB)",
]

FORMS = {
    "key value": lambda i, rng: f"step {i} loss {2 + rng.random():.4f} lr {3e-4:.2e} grad_norm {rng.random():.3f} tok/s {40000 + rng.randrange(9000)}",
    "HF dict": lambda i, rng: f"{{'loss': {2 + rng.random():.4f}, 'grad_norm': {rng.random():.4f}, 'learning_rate': 4.9e-05, 'epoch': {i / 1000:.2f}}}",
    "tqdm": lambda i, rng: f" {i % 100:3d}%|█▏        | {i}/100000 [00:30<03:40,  4.{rng.randrange(99):02d}it/s]",
    "Lightning": lambda i, rng: (f"Epoch 0:  12%|█▏        | {i}/100000 [00:30<03:40, 4.00it/s, v_num=0, loss={2 + rng.random():.3f}, "
                                 f"train_loss_step={2 + rng.random():.3f}]"),
}


def generate(n: int, share: float, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    forms = list(FORMS.values())
    out = []
    for i in range(1, n + 1):
        if rng.random() < share:
            out.append(forms[i % len(forms)](i, rng))
        else:
            out.append(rng.choice(CHATTER).format(r=rng.randrange(8), n=rng.randrange(100000), k=rng.randrange(10)))
    return out


def per_line(fn, lines: list[str], repeat: int) -> float:
    """Best of ``repeat`` runs, nanoseconds per line."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn(lines)
        best = min(best, time.perf_counter() - t)
    return best / len(lines) * 1e9


def parse_all(lines: list[str]) -> None:
    p = MetricParser()
    for line in lines:
        p.parse(line)


def classify_all(lines: list[str]) -> None:
    c = Classifier()
    for line in lines:
        c.feed(line)


def scan(lines: list[str], recorder: bool, tmp: Path) -> None:
    s = LogScan(re.compile(r"step \d+"), Classifier())
    if recorder:
        s.metrics = MetricsStore(tmp / f"j-{time.monotonic_ns()}").recorder(1)
    data = [("\n".join(lines[i:i + 500]) + "\n").encode() for i in range(0, len(lines), 500)]  # one read = 500 lines
    for chunk in data:
        s.feed(chunk)


def streaming(n: int, seed: int = 1234) -> list[str]:
    """The lines of bench/tui_target.py's job: a metric line per step, a warning every 500 lines."""
    rnd = random.Random(seed)
    out, step = [], 0
    for i in range(1, n + 1):
        if i % 500 == 0:
            out.append("/opt/venv/lib/python3.11/site-packages/torch/optim/lr_scheduler.py:143: UserWarning: "
                       f"Detected call of `lr_scheduler.step()` before `optimizer.step()` (step {step})")
            continue
        step += 1
        loss = 2.2 + 1.8 * math.exp(-step / 40000) + rnd.uniform(-0.05, 0.05)
        out.append(f"step {step} | loss {loss:.4f} | lr {3e-4 * min(1.0, step / 2000):.3e} | grad_norm {rnd.uniform(0.4, 2.5):.3f} | "
                   f"tokens/s {rnd.randint(118000, 131000)} | mem 61.{rnd.randint(0, 9)}GiB | elapsed {i / 10000:.2f}s")
    return out


def reader_scan(tmp: Path) -> LogScan:
    s = LogScan(re.compile(r"^step"), Classifier(), nonfinite=NonFiniteWatch())
    s.metrics = MetricsStore(tmp / f"j-{time.monotonic_ns()}").recorder(1)
    return s


def longest_block(lines: list[str], read: int, tmp: Path, sliced: bool) -> tuple[float, float]:
    """``(longest stretch without a turn of the event loop, whole read)`` in ms, for reads of ``read``
    lines fed to a reader's scan, the worst read."""
    reads = [("\n".join(lines[i:i + read]) + "\n").encode() for i in range(0, len(lines), read)]
    worst = (0.0, 0.0)

    async def run() -> None:
        nonlocal worst
        scan = reader_scan(tmp)
        feed_async = getattr(scan, "feed_async", None)
        gaps: list[float] = []
        stop = False

        async def ticker() -> None:
            last = time.perf_counter()
            while not stop:
                await asyncio.sleep(0)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        t = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        for data in reads:
            gaps.clear()
            t0 = time.perf_counter()
            if sliced and feed_async is not None:
                await feed_async(data)
            else:
                scan.feed(data)
            whole = time.perf_counter() - t0
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            worst = max(worst, (max(gaps) * 1e3, whole * 1e3))
        stop = True
        await t

    asyncio.run(run())
    return worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--metric-share", type=float, default=0.1, help="share of lines that hold metrics")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--read", type=int, default=5000, help="lines in one read of the streaming log (default 5000)")
    args = ap.parse_args()
    lines = generate(args.lines, args.metric_share)
    print(f"{args.lines:,} lines, {args.metric_share:.0%} with metrics (best of {args.repeat})")
    parse_ns = per_line(parse_all, lines, args.repeat)
    cls_ns = per_line(classify_all, lines, args.repeat)
    print(f"  metrics parser        {parse_ns:7.0f} ns/line  ({1e9 / parse_ns:12,.0f} lines/s)")
    print(f"  classifier (baseline) {cls_ns:7.0f} ns/line  ({1e9 / cls_ns:12,.0f} lines/s)   parser/classifier: {parse_ns / cls_ns:.2f}")
    chatter = [ln for ln in lines if MetricParser().parse(ln) is None]
    print(f"  parser, lines without metrics only: {per_line(parse_all, chatter, args.repeat):.0f} ns/line (the prefilter)")
    for name, make in FORMS.items():
        rng = random.Random(2)
        only = [make(i, rng) for i in range(1, 20_001)]
        print(f"  parser, {name:<10} lines only: {per_line(parse_all, only, args.repeat):6.0f} ns/line")
    with tempfile.TemporaryDirectory() as tmp:
        base = per_line(lambda ls: scan(ls, False, Path(tmp)), lines, args.repeat)
        withm = per_line(lambda ls: scan(ls, True, Path(tmp)), lines, args.repeat)
    print(f"  job reader per line (LogScan.feed): {base:.0f} ns without metrics, {withm:.0f} ns with the recorder "
          f"(+{withm - base:.0f} ns, +{(withm - base) / base:.0%})")
    stream = streaming(60_000)
    with tempfile.TemporaryDirectory() as tmp:
        per = per_line(lambda ls: [reader_scan(Path(tmp)).feed(("\n".join(ls[i:i + args.read]) + "\n").encode())
                                   for i in range(0, len(ls), args.read)], stream, args.repeat)
        print(f"streaming log (every line a metric line, bench_log_pane's job): job reader {per:.0f} ns/line "
              f"= {per * 1e-9 * 10000:.1%} of a core at 10,000 lines/s")
        for sliced in (False, True):
            gap, whole = min(longest_block(stream[:30_000], args.read, Path(tmp), sliced) for _ in range(args.repeat))
            how = "in slices (feed_async)" if sliced else "at once (feed)         "
            print(f"  one read of {args.read:,} lines {how}: {whole:6.1f} ms of work, the event loop waits at most {gap:6.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
