"""Benchmark: what reading metrics from the log costs per line, against the classifier in the same run.

Generates a training log where most lines hold no metric (compile and NCCL chatter, warnings, data
loading) and some do, in the forms cockpit reads (``step N loss X …``, HF Trainer dicts, tqdm and
Lightning bars), then times per line:

* ``MetricParser.parse``: the keyword prefilter and, for the lines that pass it, the parse;
* the baseline: ``Classifier.feed`` (the failure classifier every log line already goes through);
* each form alone (metric lines only: the worst case);
* the whole path the job reader runs per line (``LogScan.feed``: sanitise, progress, classifier),
  with and without the metrics recorder (parse, series, one JSON record per metric line, one
  write per read of the log), so the difference is what metrics add to following a job.

Usage: ``python bench/bench_metrics.py [--lines N] [--metric-share F] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cockpit.core.actions.jobstate import LogScan  # noqa: E402
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--metric-share", type=float, default=0.1, help="share of lines that hold metrics")
    ap.add_argument("--repeat", type=int, default=3)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
