"""LogScan.feed_async: a long backlog is judged in slices with turns of the event loop between them,
to the same result as one synchronous feed, and a feed cancelled between slices loses no line."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from cockpit.core.actions.logscan import LogScan
from cockpit.core.actions.nonfinite import NonFiniteWatch
from cockpit.core.metrics import MetricsStore
from cockpit.core.probes.signatures import Classifier
from tests.lab import await_for


def _log(n: int) -> bytes:
    out = []
    for i in range(1, n + 1):
        out.append(f"step {i} | loss {2 + 1 / i:.4f} | lr 3.000e-04 | tokens/s {120000 + i % 977}")
        if i == n // 2:
            out += ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                    "RuntimeError: CUDA error: an illegal memory access was encountered"]
        if i == n - 5:
            out.append(f"step {i} | loss nan | lr 3.000e-04 | tokens/s 1")
    return ("\n".join(out) + "\n").encode() + b"step 99999 | loss 1.0"  # an unfinished last line (peeked)


def _scan(tmp: Path, name: str) -> LogScan:
    s = LogScan(re.compile(r"^step"), Classifier(), nonfinite=NonFiniteWatch())
    s.metrics = MetricsStore(tmp / name).recorder(1)
    return s


def _state(s: LogScan) -> dict[str, Any]:
    m = s.metrics.metrics
    nf = s.nonfinite.first if s.nonfinite is not None else None
    return {"lines": s.lines, "log_lines": s.log_lines, "progress": (s.progress_count, s.progress_line, s.last_progress, s.progress_no),
            "peeked": s.peeked, "tail": s.tail_lines, "error": s.error(), "tb": sorted(s.tb_before),
            "nonfinite": nf and (nf.line_no, nf.name), "metric_lines": m.lines, "readings": m.readings,
            "loss": (m.series["loss"].xs, m.series["loss"].ys, m.series["loss"].count)}


def test_a_backlog_fed_in_slices_gives_the_loop_turns_and_the_same_verdicts(tmp_path: Path) -> None:
    data = _log(20_000)
    ref = _scan(tmp_path, "ref")
    for i in range(0, len(data), 300_000):  # the same reads, judged at once
        ref.feed(data[i:i + 300_000])
    scan = _scan(tmp_path, "sliced")
    turns = 0

    async def main() -> None:
        nonlocal turns
        stop = False

        async def ticker() -> None:
            nonlocal turns
            while not stop:
                turns += 1
                await asyncio.sleep(0)

        t = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        base = turns
        for i in range(0, len(data), 300_000):
            await scan.feed_async(data[i:i + 300_000], slice_s=0.002)
        stop = True
        await t
        turns -= base

    asyncio.run(main())
    assert turns >= 5  # other tasks ran while the backlog was judged (a synchronous feed gives them none)
    assert not scan.queue
    assert _state(scan) == _state(ref)
    assert ref.error() is not None and ref.nonfinite is not None and ref.nonfinite.first is not None and ref.peeked


def test_a_feed_cancelled_between_slices_leaves_the_rest_for_the_next_one(tmp_path: Path) -> None:
    data = _log(20_000)
    half = len(data) // 2
    ref = _scan(tmp_path, "ref")
    ref.feed(data[:half])
    ref.feed(data[half:])
    scan = _scan(tmp_path, "cancelled")

    async def main() -> None:
        task = asyncio.ensure_future(scan.feed_async(data[:half], slice_s=0.0005))
        await await_for(lambda: scan.log_lines > 0, timeout=30)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled() and scan.queue  # stopped between two slices, lines left to judge
        await scan.feed_async(data[half:])  # the next read judges them first

    asyncio.run(main())
    assert _state(scan) == _state(ref)
    assert scan.log_lines == ref.log_lines > 20_000
